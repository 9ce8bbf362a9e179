/**
 * The history read model's costs at 10k and 100k projects (`--projects N` for one size), each against a
 * baseline measured in the same run (`--rounds N`: the replay's ratio N times, and its median):
 *   - replay of every read model with the history vs the same replay without it (the projects
 *     projector not versioned), each in a process of its own (this file with `--replay-once`), and
 *     against a raw read of the log plus raw inserts of the replayed rows; the history's size per write;
 *   - an as-of board page (first, middle, last) vs the live page at the same depth, over HTTP
 *     (autocannon, req/s);
 *   - a diff of about 10 % of the board, paged over HTTP by the client, vs a raw SELECT of the same version rows;
 *   - the Parquet export (all three files) vs raw SELECTs of the same rows.
 * The data sets are the read bench's cached logs (bench/dataset.ts), copied: the cache is not written.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { createSqliteEventLog } from '../eventstore/sqlite/sqlite-event-log.ts';
import { anyProjector } from '../projectors/projector.ts';
import { projectsProjector } from '../projectors/projects.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectionRunner } from '../projectors/runner.ts';
import { versionDoc } from '../readmodels/sqlite/sqlite-history.ts';
import { createSqliteReadStore } from '../readmodels/sqlite/sqlite-read-store.ts';
import { inTransaction } from '../config/sqlite.ts';
import { exportAsOf } from '../service/analyst-export.ts';
import { namedPoint } from '../service/history-board.ts';
import { EMBEDDED_LIMITS } from '../service/stores.ts';
import { createClient } from '../client/index.ts';
import { benchKey, dataSetSpec, ensureDataSet } from './dataset.ts';
import { median } from './median.ts';
import { loadOn, startServer } from './servers.ts';

type Log = ReturnType<typeof createSqliteEventLog>;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const say = (line: string) => process.stdout.write(`${line}\n`);
const ROWS_PER_TRANSACTION = 1000;

/** `pulseboard export --format parquet` over `dataDir` in a child process, and its peak resident set. */
function exportPeakRss(dataDir: string, out: string): { maxRssKiB: number; ms: number } {
  // VmHWM is the peak of this program's own memory: getrusage's maxRSS also counts the forked bench's
  // resident set from before the exec (Linux keeps the larger).
  const report =
    'process.on("exit",()=>{const m=/VmHWM:\\s*(\\d+)/.exec(process.getBuiltinModule("node:fs").readFileSync("/proc/self/status","utf8"));' +
    'process.stderr.write("maxrss "+(m?m[1]:process.resourceUsage().maxRSS)+"\\n")})';
  const started = performance.now();
  const cli = join(import.meta.dirname, '..', 'bin', 'pulseboard.ts');
  const args = [
    '--import',
    `data:text/javascript,${encodeURIComponent(report)}`,
    cli,
    'export',
    '--format',
    'parquet',
    '--out',
    out,
  ];
  const child = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', ...args], {
    env: { ...process.env, PULSEBOARD_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  const ms = performance.now() - started;
  const found = /maxrss (\d+)/.exec(child.stderr);
  if (child.status !== 0 || !found) throw new Error(`pulseboard export failed (${child.status}): ${child.stderr}`);
  return { maxRssKiB: Number(found[1]), ms };
}

/** Reads the whole log in pages of 10,000, and nothing else: the raw half of a replay's baseline. */
export async function rawLogRead(log: Log): Promise<number> {
  let read = 0;
  for (let after = 0; ;) {
    const page = await log.readAll({ afterPosition: after, limit: 10_000 });
    if (page.length === 0) return read;
    read += page.length;
    after = page[page.length - 1]!.position;
  }
}

/** Every projector, the projects one without its history (not versioned): a replay's cost without the history model. */
export const projectorsWithoutHistory = projectors.map((p) =>
  p.collection === projectsProjector.collection ? anyProjector({ ...projectsProjector, versioned: undefined }) : p,
);

/**
 * `--replay-once EVENTS TARGET [--plain]`: one replay into a new read-model file, in a process of its
 * own as `pulseboard replay` runs (one after another in a process would meet the first one's heap).
 */
async function replayOnce(events: string, target: string, plain: boolean): Promise<void> {
  const log = createSqliteEventLog(events);
  const store = createSqliteReadStore(target, { bulkBuild: true });
  const list = plain ? projectorsWithoutHistory : [...projectors];
  const started = performance.now();
  await createProjectionRunner(log, store, list, EMBEDDED_LIMITS).catchUp();
  await store.close();
  const ms = performance.now() - started;
  await log.close();
  process.stdout.write(`${JSON.stringify({ ms })}\n`);
}

/**
 * Inserts every row of every table of `source` into a fresh read-model file of the same schema
 * (made by the store itself), written like the replay's (no journal), triggers dropped so each row
 * is one plain insert, in 1000-row transactions; times only the transactions.
 */
function rawInsertBaseline(source: string, target: string): { rows: number; ms: number } {
  createSqliteReadStore(target)
    .close()
    .catch(() => undefined);
  const db = new DatabaseSync(target);
  db.exec('PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144');
  const names = (from: DatabaseSync, sql: string) => (from.prepare(sql).all() as { name: string }[]).map((r) => r.name);
  for (const name of names(db, "SELECT name FROM sqlite_master WHERE type = 'trigger'"))
    db.exec(`DROP TRIGGER ${name}`);
  const from = new DatabaseSync(source, { readOnly: true });
  let rows = 0;
  let ms = 0;
  for (const table of names(from, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")) {
    const columns = names(from, `SELECT name FROM pragma_table_info('${table}')`);
    const insert = db.prepare(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
    );
    const select = from.prepare(`SELECT ${columns.join(', ')} FROM ${table}`);
    select.setReturnArrays(true);
    let chunk: unknown[][] = [];
    const flush = () => {
      const started = performance.now();
      inTransaction(db, () => {
        for (const row of chunk) insert.run(...(row as (string | number | null)[]));
      });
      ms += performance.now() - started;
      rows += chunk.length;
      chunk = [];
    };
    for (const row of select.iterate() as Iterable<unknown[]>) {
      chunk.push(row);
      if (chunk.length === ROWS_PER_TRANSACTION) flush();
    }
    if (chunk.length > 0) flush();
  }
  from.close();
  db.close();
  return { rows, ms };
}

const DIFF_WALKS = 7;

/**
 * The median time of DIFF_WALKS runs of each of `works`, with the value of its last; the works run in
 * turn, so none of them meets a warmer process or a quieter machine than the others.
 */
async function mediansOf<T>(...works: (() => Promise<T>)[]): Promise<{ ms: number; value: T }[]> {
  const runs = works.map((): { ms: number; value: T }[] => []);
  for (let i = 0; i < DIFF_WALKS; i++) for (const [n, work] of works.entries()) runs[n]!.push(await timed(work));
  return runs.map((own) => ({ ms: median(own.map((r) => r.ms)), value: own.at(-1)!.value }));
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

async function benchSize(projects: number, rounds: number): Promise<void> {
  const cached = await ensureDataSet(dataSetSpec(projects));
  const dir = mkdtempSync(join(tmpdir(), `pulseboard-history-bench-${projects}-`));
  try {
    for (const file of ['events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm'])
      if (existsSync(join(cached, file))) copyFileSync(join(cached, file), join(dir, file));
    const log = createSqliteEventLog(join(dir, 'events.sqlite'));
    const head = await log.headPosition();
    say(`\n${projects} projects, ${head} log positions`);

    const withPath = join(dir, 'readmodels.sqlite');
    await benchReplay(log, dir, withPath, rounds);
    await benchReads(projects, dir, log, withPath);
    await log.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One replay in a process of its own, as `pulseboard replay` runs; its milliseconds. */
function replayInChild(events: string, target: string, plain: boolean): number {
  const args = ['--replay-once', events, target, ...(plain ? ['--plain'] : [])];
  const child = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', import.meta.filename, ...args], {
    encoding: 'utf8',
  });
  if (child.status !== 0) throw new Error(`the replay failed (${child.status}): ${child.stderr}`);
  return (JSON.parse(child.stdout) as { ms: number }).ms;
}

/**
 * Replay without the history (the projects projector not versioned), then with it into `withPath`, against
 * the raw baseline. With `rounds` above 1 the replay with the history and the raw baseline are measured
 * again, each round's ratio from a replay and a baseline taken one after the other (this host's speed
 * drifts by more than the gains being measured), and the median ratio is reported.
 */
async function benchReplay(log: Log, dir: string, withPath: string, rounds: number): Promise<void> {
  const events = join(dir, 'events.sqlite');
  const plainPath = join(dir, 'plain.sqlite');
  const withoutMs = replayInChild(events, plainPath, true);
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${withPath}${suffix}`, { force: true });
    const withMs = replayInChild(events, withPath, false);
    const read = await timed(() => rawLogRead(log));
    const inserted = rawInsertBaseline(withPath, join(dir, 'raw.sqlite'));
    rmSync(join(dir, 'raw.sqlite'), { force: true });
    const rawMs = read.ms + inserted.ms;
    ratios.push(withMs / rawMs);
    const label = rounds > 1 ? `round ${round}: ` : '';
    const without = round === 1 ? `, ${seconds(withoutMs)} without: ${(withMs / withoutMs).toFixed(2)}x` : '';
    say(`${label}replay: ${seconds(withMs)} with the history${without}`);
    say(
      `  raw baseline: read of the log (${read.value} events) ${seconds(read.ms)} + inserts of the ${inserted.rows} rows of the replayed file ${seconds(inserted.ms)} = ${seconds(rawMs)}: ` +
        `replay/raw ${(withMs / rawMs).toFixed(2)}x (goal <= 2)`,
    );
  }
  if (rounds > 1)
    say(
      `replay/raw, median of ${rounds} rounds: ${median(ratios).toFixed(2)}x (${ratios.map((r) => r.toFixed(2))}; goal <= 2)`,
    );
  const db = new DatabaseSync(withPath, { readOnly: true });
  const versions = (db.prepare('SELECT count(*) AS n FROM history_versions').get() as { n: number }).n;
  const sizeOf = (path: string) => statSync(path).size;
  const perWrite = (sizeOf(withPath) - sizeOf(plainPath)) / Math.max(1, versions);
  rmSync(plainPath, { force: true });
  say(
    `history: ${versions} writes, ${(perWrite / 1024).toFixed(2)} KiB on disk per write (file ${sizeOf(withPath) >> 20} MiB)`,
  );
  db.close();
}

/** The as-of pages, the diff and the export over HTTP and the CLI, against their baselines. */
async function benchReads(projects: number, dir: string, log: Log, withPath: string) {
  const key = await benchKey(dir);
  const archive = await log.archiveId();
  const cursorAt = (seq: number) => namedPoint(archive, { seq, at: null }).cursor;
  const server = await startServer(['app', dir]);
  const raw = new DatabaseSync(withPath, { readOnly: true });
  // Points: the middle of the log (as-of pages), and the start of the last 10 % of the board's writes (the diff).
  const head = await log.headPosition();
  const mid = Math.floor(head / 2);
  const tenth = raw
    .prepare('SELECT valid_from FROM history_versions WHERE valid_to > ? ORDER BY valid_from DESC LIMIT 1 OFFSET ?')
    .get(head, Math.floor(projects / 10)) as { valid_from: number } | undefined;
  const from = tenth?.valid_from ?? 0;
  try {
    const totalPages = async (query: string) =>
      (
        (await (
          await fetch(`http://127.0.0.1:${server.port}/v1/projects?page=1${query}`, {
            headers: { authorization: `Bearer ${key}` },
          })
        ).json()) as { totalPages: number }
      ).totalPages;
    const [live, past] = [await totalPages(''), await totalPages(`&asOf=${cursorAt(mid)}`)];
    for (const [label, at] of [
      ['first', 0],
      ['middle', 0.5],
      ['last', 1],
    ] as const) {
      const page = (total: number) => Math.max(1, Math.ceil(total * at));
      const auth = { authorization: `Bearer ${key}` };
      const liveRps = (await loadOn(server, `/v1/projects?page=${page(live)}`, auth)).rps;
      const pastRps = (await loadOn(server, `/v1/projects?page=${page(past)}&asOf=${cursorAt(mid)}`, auth)).rps;
      say(
        `board ${label} page: live ${liveRps.toFixed(0)} req/s; as of the middle ${pastRps.toFixed(0)} req/s: ${(liveRps / pastRps).toFixed(2)}x the live time (goal <= 3)`,
      );
    }
    // The diff of the last ~10 % of the board, walked as a user of the client does (each page asked
    // for once the one before names it), uncompressed, against a raw SELECT and parse of the same rows.
    const client = createClient({ baseUrl: `http://127.0.0.1:${server.port}`, key });
    const walkDiff = async () => {
      let rows = 0;
      const pages = client.projects.diffPages({
        from: cursorAt(from),
        to: cursorAt(head),
        limit: 100,
        prefetch: true,
      });
      for await (const step of pages) {
        if (!step.ok) throw new Error(`diff walk: ${step.error.message}`);
        rows += step.page.changes.length;
      }
      return rows;
    };
    const readRaw = async () =>
      (
        raw
          .prepare(
            `SELECT CAST(${versionDoc('a.', 'ta.')} AS TEXT) AS doc, CAST(${versionDoc('b.', 'tb.')} AS TEXT) AS before
          FROM history_versions a LEFT JOIN history_versions b ON b.rowid = (SELECT rowid FROM history_versions
            WHERE collection = a.collection AND id = a.id AND valid_from <= ?1 ORDER BY valid_from DESC LIMIT 1)
          LEFT JOIN history_shared_texts ta ON ta.rowid = a.shared_text LEFT JOIN history_shared_texts tb ON tb.rowid = b.shared_text
          WHERE a.collection = 'projects' AND a.valid_from > ?1 AND a.valid_to > ?2`,
          )
          .all(from, head) as { doc: string; before: string | null }[]
      ).map((r) => [JSON.parse(r.doc), r.before === null ? null : JSON.parse(r.before)]).length;
    // A walk is short: the medians of DIFF_WALKS, in turn, after one of each that warms the path up.
    await walkDiff();
    await readRaw();
    const [diff, rawRead] = await mediansOf(walkDiff, readRaw);
    say(
      `diff of ${diff!.value} projects (${((diff!.value / projects) * 100).toFixed(1)} % of the board), paged over HTTP: ${diff!.ms.toFixed(0)} ms; ` +
        `raw SELECT and parse of the same rows: ${rawRead!.ms.toFixed(0)} ms (medians of ${DIFF_WALKS}): ${(rawRead!.ms / diff!.ms).toFixed(2)} of the raw read's speed (goal >= 0.3)`,
    );
    // The Parquet export (the board's versions, the calls, the events) against raw SELECTs of the same rows.
    const out = join(dir, 'export');
    mkdirSync(out);
    const store = createSqliteReadStore(withPath);
    const point = { seq: head, at: null };
    const exported = await timed(() =>
      exportAsOf({ log, store, point, named: namedPoint(archive, point), format: 'parquet', dir: out }),
    );
    await store.close();
    const rawExport = await timed(async () => {
      let n = 0;
      const versions = `SELECT CAST(${versionDoc('v.', 't.')} AS TEXT) AS doc FROM history_versions AS v
        LEFT JOIN history_shared_texts AS t ON t.rowid = v.shared_text WHERE v.collection = 'projects' AND v.valid_to > ?`;
      for (const row of raw.prepare(versions).iterate(head) as Iterable<{ doc: string }>)
        n += JSON.parse(row.doc) ? 1 : 0;
      const calls = "SELECT doc FROM docs WHERE collection = 'calls' AND facet = 'visible'";
      for (const row of raw.prepare(calls).iterate() as Iterable<{ doc: string }>) n += JSON.parse(row.doc) ? 1 : 0;
      const events = new DatabaseSync(join(dir, 'events.sqlite'), { readOnly: true });
      for (const _row of events.prepare('SELECT * FROM events').iterate()) n++;
      events.close();
      return n;
    });
    const { projects: p, calls, events } = exported.value;
    say(
      `parquet export: ${p} projects, ${calls} calls, ${events} events in ${seconds(exported.ms)}; raw SELECTs of the same rows ${seconds(rawExport.ms)}: ` +
        `${(rawExport.ms / exported.ms).toFixed(2)} of the raw read's speed (goal >= 0.2)`,
    );
    const cli = exportPeakRss(dir, join(dir, 'export-cli'));
    say(
      `pulseboard export --format parquet (the CLI, as of the head): peak RSS ${(cli.maxRssKiB / 1024).toFixed(0)} MiB in ${seconds(cli.ms)} (goal <= 300 MB)`,
    );
  } finally {
    raw.close();
    await server.stop();
  }
}

export async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: {
      projects: { type: 'string' },
      rounds: { type: 'string' },
      rebuild: { type: 'boolean' },
      'replay-once': { type: 'boolean' },
      plain: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  if (values['replay-once']) return replayOnce(positionals[0]!, positionals[1]!, values.plain === true);
  const rounds = values.rounds !== undefined ? Number(values.rounds) : 1;
  if (!Number.isSafeInteger(rounds) || rounds < 1) throw new Error('--rounds: a whole number of at least 1');
  const sizes = values.projects !== undefined ? [Number(values.projects)] : [10_000, 100_000];
  say('History bench. Figures taken on a shared machine: compare ratios within one run.');
  for (const projects of sizes) await benchSize(projects, rounds);
}

if (import.meta.main) await main();
