/**
 * Write-path throughput of the embedded stores, each figure printed beside a baseline measured in
 * the same run on the same machine, and the ratio (1.000 = as fast as the baseline):
 *
 * - ingest of an NDJSON data set (`ingestNdjson`, what `pulseboard ingest` runs) against inserting
 *   the same rows into the same schema, with the same page cache, in 1000-row transactions;
 * - projector catch-up (every read model from an empty store, as `serve` does) and a full replay
 *   into a new generation (`pulseboard replay`) against the sum of a raw read of the whole log
 *   (`readAll` in pages of 10,000) and a raw upsert of the final documents and their lookup keys
 *   into an empty read store (WAL, the store's page cache) in 1000-row transactions;
 * - the same catch-up and replay without the history model (the projects projector not versioned).
 *
 * Data sets come from `pulseboard generate --projects N --seed 1` and are cached in
 * <tmpdir>/pulseboard-bench-cache (generated once). Sizes: PULSEBOARD_BENCH_WRITE_PROJECTS, a comma
 * list, default 10000 (100000 takes about ten times as long; see README "Benchmarks").
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
import type { Projector } from '../projectors/projector.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectionRunner } from '../projectors/runner.ts';
import { createSqliteGenerationSpace } from '../readmodels/sqlite/generations.ts';
import { createSqliteReadStore, READ_STORE_PRAGMAS } from '../readmodels/sqlite/sqlite-read-store.ts';
import { replayReadModels } from '../service/replay.ts';
import { parseConfig } from '../config/config.ts';
import { assembleStores, EMBEDDED_LIMITS, projectionLimits } from '../service/stores.ts';
import { projectorsWithoutHistory, rawLogRead } from './history.bench.ts';

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

/** Inserts the log's rows, read back from `source`, into a fresh log of the same schema; times only the transactions. */
function rawInsertBaseline(source: string, target: string): { rows: number; span: Span } {
  createSqliteEventLog(target)
    .close()
    .catch(() => undefined);
  const db = openSqlite(target);
  db.exec(EVENT_LOG_PRAGMAS);
  const from = new DatabaseSync(source, { readOnly: true });
  const columns = 'id, stream, revision, type, data, metadata, recorded_at';
  const select = from.prepare(`SELECT ${columns}, position FROM events WHERE position > ? ORDER BY position LIMIT ?`);
  select.setReturnArrays(true);
  const insert = db.prepare(`INSERT INTO events (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  let after = 0;
  let rows = 0;
  let elapsed = ZERO;
  for (;;) {
    const chunk = select.all(after, ROWS_PER_TRANSACTION) as unknown as (string | number)[][];
    if (chunk.length === 0) break;
    after = chunk[chunk.length - 1]![7] as number;
    const start = mark();
    inTransaction(db, () => {
      for (const r of chunk) insert.run(...r.slice(0, 7));
    });
    elapsed = plus(elapsed, since(start));
    rows += chunk.length;
  }
  from.close();
  db.close();
  return { rows, span: elapsed };
}

type DocRow = Record<'collection' | 'id' | 'doc' | 'state' | 'written_at' | 'sort_key' | 'facet' | 'keys', string> & {
  seq: number;
};

/**
 * Upserts the final documents of a built read store (rows and lookup keys as stored) into an empty
 * read store of the same schema, in 1000-document transactions; times only the transactions.
 */
function rawUpsertBaseline(source: string, target: string): { docs: number; span: Span } {
  createSqliteReadStore(target)
    .close()
    .catch(() => undefined);
  const db = openSqlite(target);
  db.exec(READ_STORE_PRAGMAS);
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
    const baseline = rawInsertBaseline(logPath, join(dir, 'baseline-events.sqlite'));
    if (baseline.rows !== head) throw new Error(`baseline inserted ${baseline.rows} rows, the log holds ${head}`);
    line(
      `ingest    ${ingested.counts.accepted} messages, ${head} events in ${time(ingestSpan)}: ${rate(head, ingestSpan.wall)} rows`,
    );
    line(
      `  baseline  raw inserts of the same ${baseline.rows} rows in 1000-row transactions: ${time(baseline.span)}, ${rate(baseline.rows, baseline.span.wall)} rows`,
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
    const upserted = rawUpsertBaseline(
      join(dataDir, `readmodels-${replayed.generation}.sqlite`),
      join(dir, 'baseline-readmodels.sqlite'),
    );
    const raw = plus(readSpan, upserted.span);
    line(
      `catch-up  ${head} log positions (${applied} events applied) in ${time(catchUpSpan)}: ${rate(head, catchUpSpan.wall)} positions`,
    );
    line(
      `replay    ${head} log positions (${replayed.eventsApplied} events applied) in ${time(replaySpan)}: ${rate(head, replaySpan.wall)} positions`,
    );
    line(
      `  baseline  raw read of the whole log (${read} events, readAll pages of 10,000): ${time(readSpan)}, ${rate(read, readSpan.wall)} events`,
    );
    line(
      `  baseline  raw upsert of the ${upserted.docs} final documents and their keys: ${time(upserted.span)}, ${rate(upserted.docs, upserted.span.wall)} documents`,
    );
    line(`  ratio     catch-up ${ratio(raw, catchUpSpan)}; goal ≥ 0.5 (read + upsert = ${time(raw)})`);
    line(`  ratio     replay   ${ratio(raw, replaySpan)}; goal ≥ 0.5`);

    // The same two without the history model (the projects projector not versioned), for the bench only.
    const plain = projectorsWithoutHistory;
    const plainStore = createSqliteReadStore(join(dir, 'catch-up-plain.sqlite'));
    start = mark();
    await createProjectionRunner(log, plainStore, plain, EMBEDDED_LIMITS).catchUp();
    const plainCatchUp = since(start);
    await plainStore.close();
    const plainReplay = (await replay(join(dir, 'data-plain'), plain)).span;
    line(`without the history model: catch-up in ${time(plainCatchUp)}, replay in ${time(plainReplay)}`);
    line(`  ratio     catch-up ${ratio(raw, plainCatchUp)}; replay ${ratio(raw, plainReplay)}`);
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
