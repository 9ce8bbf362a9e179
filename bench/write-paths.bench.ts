/**
 * Write paths of the embedded stores, each beside a baseline of the same run (ratio 1.000 = as fast):
 * ingest of an NDJSON data set against raw 1000-row inserts of the same rows; catch-up and replay
 * against a raw read of the log plus raw upserts of the final documents (and, for the replay, raw
 * inserts of every table of the replayed file); both again without the history model, and the history's
 * size per write. Sizes: PULSEBOARD_BENCH_WRITE_PROJECTS, default 10000 (README "Benchmarks").
 */
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { inTransaction, openSqlite } from '../config/sqlite.ts';
import { createSqliteEventLog, EVENT_LOG_PRAGMAS } from '../eventstore/sqlite/sqlite-event-log.ts';
import { createDeadLetterFile, ingestNdjson } from '../ingest/ndjson.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { anyProjector, type Projector } from '../projectors/projector.ts';
import { projectsProjector } from '../projectors/projects.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectionRunner } from '../projectors/runner.ts';
import { createSqliteGenerationSpace } from '../readmodels/sqlite/generations.ts';
import { createSqliteReadStore, READ_STORE_PRAGMAS } from '../readmodels/sqlite/sqlite-read-store.ts';
import { replayReadModels } from '../service/replay.ts';
import { parseConfig } from '../config/config.ts';
import { assembleStores, EMBEDDED_LIMITS, projectionLimits } from '../service/stores.ts';

const FOLLOWER_PROVIDER = 'followerscope';
const ROWS_PER_TRANSACTION = 1000;

/**
 * Wall-clock and CPU (user + system) seconds of this process. On a machine shared with other work the
 * wall clock also counts time spent waiting for a core; CPU time does not, so both ratios are printed.
 */
type Span = { wall: number; cpu: number };
type Mark = { at: bigint; usage: NodeJS.CpuUsage };
const mark = (): Mark => ({ at: process.hrtime.bigint(), usage: process.cpuUsage() });
function since(start: Mark): Span {
  const usage = process.cpuUsage(start.usage);
  return { wall: Number(process.hrtime.bigint() - start.at) / 1e9, cpu: (usage.user + usage.system) / 1e6 };
}
const plus = (a: Span, b: Span): Span => ({ wall: a.wall + b.wall, cpu: a.cpu + b.cpu });
const ZERO: Span = { wall: 0, cpu: 0 };
const time = (span: Span) => `${span.wall.toFixed(1)} s (cpu ${span.cpu.toFixed(1)} s)`;
const ratio = (baseline: Span, ours: Span) =>
  `${(baseline.wall / ours.wall).toFixed(3)} by wall clock, ${(baseline.cpu / ours.cpu).toFixed(3)} by cpu time`;
const rate = (n: number, s: number) => `${Math.round(n / s).toLocaleString('en-US')}/s`;
const line = (text: string) => process.stdout.write(`${text}\n`);
const figure = (what: string, span: Span, n: number, unit: string) =>
  line(`${what} in ${time(span)}: ${rate(n, span.wall)} ${unit}`);

/** Reads the whole log in pages of 10,000, and nothing else: the raw half of a replay's baseline. */
async function rawLogRead(log: ReturnType<typeof createSqliteEventLog>): Promise<number> {
  let read = 0;
  for (let after = 0; ;) {
    const page = await log.readAll({ afterPosition: after, limit: 10_000 });
    if (page.length === 0) return read;
    read += page.length;
    after = page[page.length - 1]!.position;
  }
}

/** Every projector, the projects one without its history (not versioned): a replay's cost without the history model. */
const projectorsWithoutHistory = projectors.map((p) =>
  p.collection === projectsProjector.collection ? anyProjector({ ...projectsProjector, versioned: undefined }) : p,
);

function dataSet(projects: number): string {
  const cache = join(tmpdir(), 'pulseboard-bench-cache');
  mkdirSync(cache, { recursive: true });
  const file = join(cache, `projects-${projects}-seed-1.ndjson`);
  if (existsSync(file)) return file;
  const partial = `${file}.${process.pid}.partial`;
  const cli = join(import.meta.dirname, '..', 'bin', 'pulseboard.ts');
  const args = [cli, 'generate', '--projects', String(projects), '--seed', '1', '--out', partial];
  const generated = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, PULSEBOARD_FOLLOWER_PROVIDER: FOLLOWER_PROVIDER },
  });
  if (generated.status !== 0) throw new Error(`generate --projects ${projects} failed`);
  renameSync(partial, file);
  return file;
}

/**
 * Inserts every row of `source`'s tables (`only`, or all but SQLite's own) into `db`, a fresh file of the
 * same schema, triggers dropped so each row is one plain insert, in 1000-row transactions; times only those.
 */
function rawCopy(source: string, db: DatabaseSync, only?: string[]): { rows: number; span: Span } {
  const names = (from: DatabaseSync, sql: string) => (from.prepare(sql).all() as { name: string }[]).map((r) => r.name);
  for (const name of names(db, "SELECT name FROM sqlite_master WHERE type = 'trigger'"))
    db.exec(`DROP TRIGGER ${name}`);
  const from = new DatabaseSync(source, { readOnly: true });
  let rows = 0;
  let span = ZERO;
  const tables =
    only ?? names(from, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  for (const table of tables) {
    const columns = names(from, `SELECT name FROM pragma_table_info('${table}')`);
    const insert = db.prepare(`INSERT INTO ${table} (${columns}) VALUES (${columns.map(() => '?')})`);
    const select = from.prepare(`SELECT ${columns} FROM ${table}`);
    select.setReturnArrays(true);
    let chunk: (string | number | null)[][] = [];
    const flush = () => {
      const started = mark();
      inTransaction(db, () => chunk.forEach((row) => insert.run(...row)));
      span = plus(span, since(started));
      rows += chunk.length;
      chunk = [];
    };
    for (const row of select.iterate() as Iterable<(string | number | null)[]>)
      if (chunk.push(row) === ROWS_PER_TRANSACTION) flush();
    flush();
  }
  from.close();
  db.close();
  return { rows, span };
}

/** A fresh file of the schema `create` makes, opened with `pragmas` for a raw baseline. */
async function freshFile(
  path: string,
  create: (path: string) => { close(): Promise<void> },
  pragmas: string,
  open = openSqlite,
) {
  await create(path).close();
  const db = open(path);
  db.exec(pragmas);
  return db;
}

type DocRow = Record<'collection' | 'id' | 'doc' | 'state' | 'written_at' | 'sort_key' | 'facet' | 'keys', string> & {
  seq: number;
};

/**
 * Upserts the final documents of a built read store (rows and lookup keys as stored) into an empty
 * read store of the same schema, in 1000-document transactions; times only the transactions.
 */
function rawUpsertBaseline(source: string, db: DatabaseSync): { docs: number; span: Span } {
  // The baseline writes the lookup keys itself, one insert per key as a plain loader would.
  db.exec('DROP TRIGGER IF EXISTS docs_keys_on_insert; DROP TRIGGER IF EXISTS docs_keys_on_change;');
  const from = new DatabaseSync(source, { readOnly: true });
  const docs = from.prepare('SELECT * FROM docs ORDER BY collection, id').all() as DocRow[];
  from.close();
  const upsert = db.prepare(`
    INSERT INTO docs (collection, id, doc, state, seq, written_at, sort_key, facet, keys) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (collection, id) DO UPDATE SET doc = excluded.doc, state = excluded.state, seq = excluded.seq,
      written_at = excluded.written_at, sort_key = excluded.sort_key, facet = excluded.facet, keys = excluded.keys`);
  const insertKey = db.prepare('INSERT OR IGNORE INTO doc_keys (collection, key, value, id) VALUES (?, ?, ?, ?)');
  let elapsed = ZERO;
  for (let i = 0; i < docs.length; i += ROWS_PER_TRANSACTION) {
    const chunk = docs.slice(i, i + ROWS_PER_TRANSACTION);
    const start = mark();
    inTransaction(db, () => {
      for (const d of chunk) {
        upsert.run(d.collection, d.id, d.doc, d.state, d.seq, d.written_at, d.sort_key, d.facet, d.keys);
        for (const [key, values] of Object.entries(JSON.parse(d.keys) as Record<string, string[]>)) {
          for (const value of values) insertKey.run(d.collection, key, value, d.id);
        }
      }
    });
    elapsed = plus(elapsed, since(start));
  }
  db.close();
  return { docs: docs.length, span: elapsed };
}

async function benchSize(projects: number): Promise<void> {
  const file = dataSet(projects);
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-write-bench-'));
  try {
    line(`\n-- ${projects.toLocaleString('en-US')} projects (${(statSync(file).size / 1e6).toFixed(0)} MB of NDJSON)`);

    // Ingest, then the baseline: the same rows into the same schema.
    const logPath = join(dir, 'events.sqlite');
    const log = createSqliteEventLog(logPath);
    const deadLetter = createDeadLetterFile(join(dir, 'dead-letter.ndjson'));
    let start = mark();
    const ingested = await ingestNdjson([{ name: file, stream: createReadStream(file) }], {
      ingestor: createIngestor(log, { followerProvider: FOLLOWER_PROVIDER }),
      deadLetter,
    });
    const ingestSpan = since(start);
    await deadLetter.close();
    if (!ingested.ok || ingested.counts.rejected > 0)
      throw new Error(`ingest did not store every message: ${JSON.stringify(ingested)}`);
    const head = await log.headPosition();
    const eventsDb = await freshFile(join(dir, 'baseline-events.sqlite'), createSqliteEventLog, EVENT_LOG_PRAGMAS);
    const baseline = rawCopy(logPath, eventsDb, ['events']);
    if (baseline.rows !== head) throw new Error(`baseline inserted ${baseline.rows} rows, the log holds ${head}`);
    figure(`ingest    ${ingested.counts.accepted} messages, ${head} events`, ingestSpan, head, 'rows');
    figure(
      `  baseline  raw inserts of the same ${baseline.rows} rows, 1000 a transaction,`,
      baseline.span,
      head,
      'rows',
    );
    line(`  ratio     ${ratio(baseline.span, ingestSpan)} (goal ≥ 0.8)`);

    // Catch-up of every read model from an empty store, with the live limits (what `serve` does at start).
    const catchUpPath = join(dir, 'catch-up.sqlite');
    const stores = assembleStores(log, createSqliteReadStore(catchUpPath), EMBEDDED_LIMITS);
    start = mark();
    const applied = await stores.catchUp();
    const catchUpSpan = since(start);
    await stores.store.close();

    // Replay into a new generation, with the limits `pulseboard replay` uses on the embedded store.
    const dataDir = join(dir, 'data');
    const config = parseConfig({ PULSEBOARD_DATA_DIR: dataDir });
    if (!config.ok) throw new Error(config.reason);
    const replay = async (into: string, list: readonly Projector[]) => {
      const limits = projectionLimits(config.config, 'replay');
      const begun = mark();
      const done = await replayReadModels({
        space: createSqliteGenerationSpace(into),
        log,
        projectors: list,
        ...limits,
      });
      const span = since(begun);
      if (!done.ok) throw new Error(done.reason);
      return { ...done, span };
    };
    const replayed = await replay(dataDir, projectors);
    const replaySpan = replayed.span;

    // Baselines: the raw read of the whole log, the raw upsert of the final documents.
    start = mark();
    const read = await rawLogRead(log);
    const readSpan = since(start);
    const replayedFile = join(dataDir, `readmodels-${replayed.generation}.sqlite`);
    const readStore = (path: string) => createSqliteReadStore(path);
    const upserted = rawUpsertBaseline(
      replayedFile,
      await freshFile(join(dir, 'baseline-readmodels.sqlite'), readStore, READ_STORE_PRAGMAS),
    );
    const raw = plus(readSpan, upserted.span);
    figure(`catch-up  ${head} log positions (${applied} events applied)`, catchUpSpan, head, 'positions');
    figure(`replay    ${head} log positions (${replayed.eventsApplied} events applied)`, replaySpan, head, 'positions');
    figure(`  baseline  raw read of the whole log (${read} events, readAll pages of 10,000)`, readSpan, read, 'events');
    figure(
      `  baseline  raw upsert of the ${upserted.docs} final documents and their keys`,
      upserted.span,
      upserted.docs,
      'documents',
    );
    line(`  ratio     catch-up ${ratio(raw, catchUpSpan)}; goal ≥ 0.5 (read + upsert = ${time(raw)})`);
    line(`  ratio     replay   ${ratio(raw, replaySpan)}; goal ≥ 0.5`);
    // Written like the replay's file: no journal.
    const noJournal = 'PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144';
    const open = (path: string) => new DatabaseSync(path);
    const tablesDb = await freshFile(join(dir, 'baseline-tables.sqlite'), readStore, noJournal, open);
    const tables = rawCopy(replayedFile, tablesDb);
    const byTables = plus(readSpan, tables.span);
    line(
      `  baseline  raw read of the log + inserts of the ${tables.rows} rows of every table of the replayed file: ${time(byTables)}; ` +
        `replay/raw ${ratio(replaySpan, byTables)} (goal <= 2)`,
    );

    // The same two without the history model (the projects projector not versioned), for the bench only.
    const plain = projectorsWithoutHistory;
    const plainStore = createSqliteReadStore(join(dir, 'catch-up-plain.sqlite'));
    start = mark();
    await createProjectionRunner(log, plainStore, plain, EMBEDDED_LIMITS).catchUp();
    const plainCatchUp = since(start);
    await plainStore.close();
    const plainReplayed = await replay(join(dir, 'data-plain'), plain);
    const plainReplay = plainReplayed.span;
    line(`without the history model: catch-up in ${time(plainCatchUp)}, replay in ${time(plainReplay)}`);
    line(`  ratio     catch-up ${ratio(raw, plainCatchUp)}; replay ${ratio(raw, plainReplay)}`);
    line(`  with the history / without: catch-up ${ratio(catchUpSpan, plainCatchUp)} (goal <= 1.5)`);
    line(`                               replay   ${ratio(replaySpan, plainReplay)}`);
    const db = new DatabaseSync(replayedFile, { readOnly: true });
    const versions = (db.prepare('SELECT count(*) AS n FROM history_versions').get() as { n: number }).n;
    db.close();
    const plainFile = join(dir, 'data-plain', `readmodels-${plainReplayed.generation}.sqlite`);
    const perWrite = (statSync(replayedFile).size - statSync(plainFile).size) / Math.max(1, versions);
    line(
      `history: ${versions} writes, ${(perWrite / 1024).toFixed(2)} KiB on disk per write (file ${statSync(replayedFile).size >> 20} MiB)`,
    );
    await log.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function main(): Promise<void> {
  const sizes = (process.env['PULSEBOARD_BENCH_WRITE_PROJECTS'] ?? '10000').split(',').map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error('PULSEBOARD_BENCH_WRITE_PROJECTS must list whole numbers of projects');
  line(
    'write paths (embedded SQLite): each figure beside its baseline measured in this run; ratio = baseline time / our time',
  );
  for (const projects of sizes) await benchSize(projects);
}

if (import.meta.main) await main();
