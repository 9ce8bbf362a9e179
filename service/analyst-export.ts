import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParquetWriter, fileWriter } from 'hyparquet-writer';
import type { z } from 'zod';
import type { EventLog } from '../eventstore/port.ts';
import {
  CALL_FACETS,
  CALLS_COLLECTION,
  callsProjector,
  foldCall,
  type CallEntity,
  type StoredCall,
} from '../projectors/calls.ts';
import { PROJECTS_COLLECTION } from '../projectors/projects.ts';
import type { AsOfPoint } from '../readmodels/history-schemas.ts';
import type { ReadStore } from '../readmodels/port.ts';
import { callRecordSchema, projectSchema, type Project } from '../readmodels/schemas.ts';
import { privatePrefix, redact } from './export.ts';
import type { Point } from './history-board.ts';

/**
 * `pulseboard export --format parquet|ndjson --as-of A --out DIR`: the board as of a point for
 * analysts, in three files: projects (the board as of the point, from the history read model),
 * calls (the calls visible then, each as it was, without thesis text) and events (the log up to the point,
 * private events left out and private fields withheld as the NDJSON export does). Each is written
 * in batches as it is read (nothing holds the board); nested objects are JSON text columns.
 */

/** Bumped when a column is added, removed or changes meaning. */
export const EXPORT_SCHEMA_VERSION = '1';
export const EXPORT_BATCH = 2000;
/** Rows per Parquet row group: projects and calls (about 1.5 KB a row) and events (a few hundred bytes). */
const GROUP_ROWS = { projects: 2_000, calls: 2_000, events: 10_000 } as const;
/** Bytes of a text column's min/max statistics kept per row group. */
const STATISTICS_TRUNCATE_LENGTH = 64;

export type ExportFormat = 'parquet' | 'ndjson';

/** A column: its name, how a row's value is read, and its kind in the file. */
type Column<R> = { name: string; kind: 'string' | 'number' | 'json' | 'int64'; value: (row: R) => unknown };

/** The column kind of a top-level field of a zod object: scalar text or number, anything else JSON text. */
function kindOf(schema: z.ZodType): 'string' | 'number' | 'json' {
  let def = (schema as unknown as { _zod: { def: { type: string; innerType?: z.ZodType } } })._zod.def;
  while ((def.type === 'nullable' || def.type === 'optional') && def.innerType) {
    def = (def.innerType as unknown as { _zod: { def: { type: string; innerType?: z.ZodType } } })._zod.def;
  }
  if (def.type === 'string') return 'string';
  if (def.type === 'number') return 'number';
  return 'json';
}

/** Columns from a response schema's fields (the schema is the single source of the shape). */
function columnsOf<R>(shape: Record<string, z.ZodType>, leaveOut: readonly string[] = []): Column<R>[] {
  return Object.entries(shape)
    .filter(([name]) => !leaveOut.includes(name))
    .map(([name, schema]) => ({
      name,
      kind: kindOf(schema),
      value: (row: R) => (row as Record<string, unknown>)[name],
    }));
}

type ProjectRow = { doc: Project; seq: number; writtenAt: string };
type EventRow = { position: number; stream: string; type: string; recordedAt: string; data: unknown };

export const PROJECT_COLUMNS: Column<ProjectRow>[] = [
  ...columnsOf<Project>(projectSchema.shape).map((c) => ({ ...c, value: (row: ProjectRow) => c.value(row.doc) })),
  { name: 'seq', kind: 'int64', value: (row) => row.seq },
  { name: 'writtenAt', kind: 'string', value: (row) => row.writtenAt },
];
/** Thesis text is private: never a column. Tokens are the stored ones (their project links are made at read time). */
export const CALL_COLUMNS: Column<StoredCall>[] = columnsOf<StoredCall>(callRecordSchema.shape, ['thesisText']);
export const EVENT_COLUMNS: Column<EventRow>[] = [
  { name: 'position', kind: 'int64', value: (row) => row.position },
  { name: 'stream', kind: 'string', value: (row) => row.stream },
  { name: 'type', kind: 'string', value: (row) => row.type },
  { name: 'recordedAt', kind: 'string', value: (row) => row.recordedAt },
  { name: 'data', kind: 'json', value: (row) => row.data },
];

/** One output file, fed batches of rows. */
type TableWriter<R> = { write(rows: readonly R[]): Promise<void>; finish(): Promise<void> };

function cell(kind: Column<unknown>['kind'], value: unknown): unknown {
  if (value === null || value === undefined) return null;
  // A JSON column takes the value itself (the writer makes its text).
  if (kind === 'int64') return BigInt(value as number);
  return value;
}

/**
 * A Parquet file written one row group at a time: rows are converted as they come and a group is
 * written once it holds `groupRows` (the file's metadata, kept until the end, grows with the number
 * of groups, so groups are larger than the read batches). Text statistics are cut to a short prefix.
 */
function parquetTable<R>(
  path: string,
  columns: readonly Column<R>[],
  metadata: Record<string, string>,
  groupRows: number,
): TableWriter<R> {
  const types = {
    string: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
    json: { type: 'BYTE_ARRAY', converted_type: 'JSON' },
    number: { type: 'DOUBLE' },
    int64: { type: 'INT64' },
  } as const;
  const writer = new ParquetWriter({
    writer: fileWriter(path),
    schema: [
      { name: 'root', num_children: columns.length },
      ...columns.map((c) => ({ name: c.name, ...types[c.kind], repetition_type: 'OPTIONAL' as const })),
    ],
    kvMetadata: Object.entries(metadata).map(([key, value]) => ({ key, value })),
    createdBy: 'pulseboard export',
    statisticsTruncateLength: STATISTICS_TRUNCATE_LENGTH,
  });
  let group: unknown[][] = columns.map(() => []);
  const flush = async () => {
    const rows = group[0]!.length;
    if (rows === 0) return;
    const columnData = columns.map((c, i) => ({ name: c.name, data: group[i]! }));
    group = columns.map(() => []);
    await writer.write({ columnData, rowGroupSize: rows });
  };
  return {
    async write(rows) {
      for (const r of rows) columns.forEach((c, i) => group[i]!.push(cell(c.kind, c.value(r))));
      if (group[0]!.length >= groupRows) await flush();
    },
    async finish() {
      await flush();
      await writer.finish();
    },
  };
}

function ndjsonTable<R>(path: string, columns: readonly Column<R>[]): TableWriter<R> {
  const stream = createWriteStream(path, { flags: 'w' });
  let failure: Error | null = null;
  stream.on('error', (error) => {
    failure = error;
  });
  return {
    async write(rows) {
      if (failure) throw failure;
      const text = rows
        .map((r) => JSON.stringify(Object.fromEntries(columns.map((c) => [c.name, c.value(r) ?? null]))))
        .join('\n');
      if (rows.length > 0 && !stream.write(`${text}\n`)) await once(stream, 'drain');
    },
    async finish() {
      if (failure) throw failure;
      stream.end();
      await once(stream, 'finish');
    },
  };
}

export type AnalystExportOptions = {
  log: EventLog;
  store: ReadStore;
  point: Point;
  /** The point as answers name it (its time and delta cursor). */
  named: AsOfPoint;
  format: ExportFormat;
  dir: string;
  onProgress?: (progress: { file: string; rows: number }) => void;
};

export type AnalystExportSummary = {
  projects: number;
  calls: number;
  events: number;
  files: string[];
};

const FORMATS: readonly ExportFormat[] = ['parquet', 'ndjson'];

/** Where a file is written until it is complete. */
const partialPath = (dir: string, file: string) => join(dir, `.${file}.partial-${process.pid}`);

/** Removes what an export of this process left unfinished in `dir` (one whose thread was ended). */
export function removePartialFiles(dir: string): void {
  for (const name of Object.keys(GROUP_ROWS))
    for (const format of FORMATS) rmSync(partialPath(dir, `${name}.${format}`), { force: true });
}

/** Newest first, as the store lists calls: sortKey, then id, descending. */
const newerFirst = (a: { sortKey: string; id: string }, b: { sortKey: string; id: string }) =>
  a.sortKey === b.sortKey ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.sortKey < b.sortKey ? 1 : -1;

/**
 * The calls visible at position `at`, each as it was then, in listing order, handed to `write` in
 * batches. The store holds calls as of `applied` (its checkpoint), and a suppression or restore
 * flips a call's facet without moving its position: so every call with an event in (at, applied] is
 * folded again from the log up to `at`, and every other one is today what it was then. Only the
 * calls changed after the point are held in memory.
 */
async function callsAsOf(
  log: EventLog,
  store: ReadStore,
  at: number,
  applied: number,
  write: (rows: StoredCall[]) => Promise<void>,
): Promise<void> {
  const typePrefixes = callsProjector.typePrefixes;
  const changed = new Set<string>();
  for (let after = at; after < applied;) {
    const batch = await log.readAll({ afterPosition: after, toPosition: applied, typePrefixes, limit: EXPORT_BATCH });
    if (batch.length === 0) break;
    for (const event of batch) {
      const key = callsProjector.keyOf(event);
      if (key !== null) changed.add(key);
    }
    after = batch[batch.length - 1]!.position;
  }
  const then = new Map<string, CallEntity>();
  if (changed.size > 0) {
    for (let after = 0; after < at;) {
      const batch = await log.readAll({ afterPosition: after, toPosition: at, typePrefixes, limit: EXPORT_BATCH });
      if (batch.length === 0) break;
      for (const event of batch) {
        const key = callsProjector.keyOf(event);
        if (key === null || !changed.has(key)) continue;
        // Thesis text is never exported: not kept, the map holds the rest of each record.
        const folded = foldCall(then.get(key) ?? null, event);
        then.set(key, folded.doc ? { ...folded, doc: { ...folded.doc, thesisText: '' } } : folded);
      }
      after = batch[batch.length - 1]!.position;
    }
  }
  const rebuilt = [...then]
    .filter(([, e]) => e.facet === CALL_FACETS.visible && e.doc !== null)
    .map(([id, e]) => ({ id, sortKey: e.sortKey, doc: e.doc! }))
    .sort(newerFirst);
  then.clear();

  // Merge the rebuilt calls into the store's visible ones (the changed ones among those skipped).
  let next = 0;
  for (let before: { sortKey: string; id: string } | undefined; ;) {
    const rows = await store.listKeyset<StoredCall>(CALLS_COLLECTION, {
      facets: [CALL_FACETS.visible],
      ...(before ? { before } : {}),
      limit: EXPORT_BATCH,
    });
    const page: StoredCall[] = [];
    for (const row of rows) {
      while (next < rebuilt.length && newerFirst(rebuilt[next]!, row) < 0) page.push(rebuilt[next++]!.doc);
      if (!changed.has(row.id)) page.push(row.doc);
    }
    if (rows.length < EXPORT_BATCH) {
      page.push(...rebuilt.slice(next).map((r) => r.doc));
      await write(page);
      return;
    }
    await write(page);
    const last = rows[rows.length - 1]!;
    before = { sortKey: last.sortKey, id: last.id };
  }
}

/**
 * Writes the three files into `dir`, each under a temporary name first and renamed once complete
 * (a failed export leaves no file that looks whole).
 */
export async function exportAsOf(options: AnalystExportOptions): Promise<AnalystExportSummary> {
  const { log, store, point, named, format, dir } = options;
  const history = store.history;
  if (!history) throw new Error('this read store keeps no history: an export as of a point is not available');
  const metadata = {
    'pulseboard.schema_version': EXPORT_SCHEMA_VERSION,
    'pulseboard.as_of': named.at ?? '',
    'pulseboard.as_of_cursor': named.cursor,
    'pulseboard.as_of_position': String(point.seq),
  };
  const open = <R>(name: keyof typeof GROUP_ROWS, columns: readonly Column<R>[]) => {
    const file = `${name}.${format}`;
    const partial = partialPath(dir, file);
    const table =
      format === 'parquet' ? parquetTable(partial, columns, metadata, GROUP_ROWS[name]) : ndjsonTable(partial, columns);
    return { file, partial, table };
  };
  const outputs: { file: string; partial: string }[] = [];
  const summary: AnalystExportSummary = { projects: 0, calls: 0, events: 0, files: [] };
  try {
    // Projects: the board as of the point, in board order, walked by keyset.
    const projects = open('projects', PROJECT_COLUMNS);
    outputs.push(projects);
    for (let after: { sortKey: string; id: string } | undefined; ;) {
      const rows = await history.scan<Project>(PROJECTS_COLLECTION, point.seq, {
        ...(after ? { after } : {}),
        limit: EXPORT_BATCH,
      });
      await projects.table.write(rows.map((r) => ({ doc: r.doc, seq: r.seq, writtenAt: r.writtenAt })));
      summary.projects += rows.length;
      options.onProgress?.({ file: projects.file, rows: summary.projects });
      if (rows.length < EXPORT_BATCH) break;
      const last = rows[rows.length - 1]!;
      after = { sortKey: last.sortKey, id: last.id };
    }
    await projects.table.finish();

    // Calls as they stood at the point (calls keep no versions; see callsAsOf). Written again from
    // the start if the projectors commit while it is read, so the file is one state of the store.
    for (let attempt = 1; ; attempt++) {
      const calls = open('calls', CALL_COLUMNS);
      outputs.push(calls);
      const seen = await store.checkpoint(CALLS_COLLECTION, { fresh: true });
      summary.calls = 0;
      await callsAsOf(log, store, point.seq, seen, async (rows) => {
        await calls.table.write(rows);
        summary.calls += rows.length;
        options.onProgress?.({ file: calls.file, rows: summary.calls });
      });
      await calls.table.finish();
      if ((await store.checkpoint(CALLS_COLLECTION, { fresh: true })) === seen) break;
      outputs.pop();
      rmSync(calls.partial, { force: true });
      if (attempt === 3) throw new Error('the calls kept changing while they were exported; run the export again');
    }

    // Events up to the point, as the NDJSON export has them (private events out, private fields withheld).
    const events = open('events', EVENT_COLUMNS);
    outputs.push(events);
    const withheld: Record<string, number> = {};
    for (let after = 0; after < point.seq;) {
      const batch = await log.readAll({ afterPosition: after, toPosition: point.seq, limit: EXPORT_BATCH });
      if (batch.length === 0) break;
      const rows = batch.filter((e) => privatePrefix(e.type) === null).map((e) => redact(e, withheld));
      await events.table.write(
        rows.map((e) => ({
          position: e.position,
          stream: e.stream,
          type: e.type,
          recordedAt: e.recordedAt,
          data: e.data,
        })),
      );
      summary.events += rows.length;
      options.onProgress?.({ file: events.file, rows: summary.events });
      after = batch[batch.length - 1]!.position;
    }
    await events.table.finish();

    for (const output of outputs) renameSync(output.partial, join(dir, output.file));
    summary.files = outputs.map((o) => o.file);
    if (format === 'ndjson') {
      // NDJSON has no file metadata: the same keys go into a manifest beside the files.
      writeFileSync(join(dir, 'manifest.json'), `${JSON.stringify({ ...metadata, files: summary.files }, null, 2)}\n`);
      summary.files.push('manifest.json');
    }
    return summary;
  } catch (error) {
    for (const output of outputs) rmSync(output.partial, { force: true });
    throw error;
  }
}
