/**
 * The history read model's costs (issue 43), at 10k and 100k projects (`--projects N` for one size),
 * each against a baseline measured in the same run (`--rounds N`: the replay's ratio N times, and its median):
 *   - replay of every read model with the history vs the same replay without it (the projects
 *     projector not versioned), each in a process of its own (bench/replay-once.ts), and against a raw
 *     read of the log plus raw inserts of the replayed rows; the history's size on disk per write;
 *   - an as-of board page (first, middle, last) vs the live page at the same depth, over HTTP
 *     (autocannon, req/s);
 *   - a diff of about 10 % of the board, paged over HTTP by the client, vs a raw SELECT of the same version rows;
 *   - the Parquet export (all three files) vs raw SELECTs of the same rows.
 * The data sets are the read bench's cached logs (bench/dataset.ts), copied: the cache is not written.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { createSqliteEventLog } from '../eventstore/sqlite/sqlite-event-log.ts';
import { versionDoc } from '../readmodels/sqlite/sqlite-history.ts';
import { createSqliteReadStore } from '../readmodels/sqlite/sqlite-read-store.ts';
import { inTransaction } from '../config/sqlite.ts';
import { exportAsOf } from '../service/analyst-export.ts';
import { namedPoint } from '../service/history-board.ts';
import { startCommand } from '../bin/start-command.ts';
import { createClient } from '../client/index.ts';
import { dataSetSpec, ensureDataSet } from './dataset.ts';
import { median } from './median.ts';
import { benchKey } from './reads.bench.ts';
import { startServer } from './servers.ts';

type LoadResult = { requests: { average: number }; non2xx: number };
const autocannon = createRequire(import.meta.url)('autocannon') as (options: object) => Promise<LoadResult>;
const LOAD_SECONDS = 3;
const CONNECTIONS = 4;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const ROWS_PER_TRANSACTION = 1000;

/**
 * Runs `pulseboard export --format parquet` over `dataDir` as a child process and reports its peak
 * resident set (the child prints its own peak at exit); `asStart`: with the node flags and
 * environment `npm start` gives the server (a smaller young generation, two malloc arenas).
 */
function exportPeakRss(dataDir: string, out: string, asStart: boolean): { maxRssKiB: number; ms: number } {
  const start = asStart ? startCommand() : { env: {}, flags: [] };
  // VmHWM is the peak of this program's own memory: getrusage's maxRSS also counts the forked bench's
  // resident set from before the exec (Linux keeps the larger).
  const report =
    'process.on("exit",()=>{const m=/VmHWM:\\s*(\\d+)/.exec(process.getBuiltinModule("node:fs").readFileSync("/proc/self/status","utf8"));' +
    'process.stderr.write("maxrss "+(m?m[1]:process.resourceUsage().maxRSS)+"\\n")})';
  const started = performance.now();
  const child = spawnSync(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      ...start.flags,
      '--import',
      `data:text/javascript,${encodeURIComponent(report)}`,
      join(import.meta.dirname, '..', 'bin', 'pulseboard.ts'),
      'export',
      '--format',
      'parquet',
      '--out',
      out,
    ],
    { env: { ...process.env, ...start.env, PULSEBOARD_DATA_DIR: dataDir }, encoding: 'utf8' },
  );
  const ms = performance.now() - started;
  const found = /maxrss (\d+)/.exec(child.stderr);
  if (child.status !== 0 || !found) throw new Error(`pulseboard export failed (${child.status}): ${child.stderr}`);
  return { maxRssKiB: Number(found[1]), ms };
}

/** Reads the whole log as the runner does (readAll in pages of 10,000), and nothing else. */
async function rawLogRead(log: ReturnType<typeof createSqliteEventLog>): Promise<number> {
  let read = 0;
  for (let after = 0; ;) {
    const page = await log.readAll({ afterPosition: after, limit: 10_000 });
    if (page.length === 0) return read;
    read += page.length;
    after = page[page.length - 1]!.position;
  }
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
  for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as {
    name: string;
  }[])
    db.exec(`DROP TRIGGER ${name}`);
  const from = new DatabaseSync(source, { readOnly: true });
  const tables = (
    from.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as {
      name: string;
    }[]
  ).map((t) => t.name);
  let rows = 0;
  let ms = 0;
  for (const table of tables) {
    const columns = (from.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[]).map(
      (c) => c.name,
    );
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
  return runs.map((own) => {
    const sorted = own.map((r) => r.ms).sort((a, b) => a - b);
    return { ms: sorted[Math.floor(DIFF_WALKS / 2)]!, value: own[own.length - 1]!.value };
  });
}
const medianOf = async <T>(work: () => Promise<T>) => (await mediansOf(work))[0]!;

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

async function load(port: number, path: string, key: string): Promise<number> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    connections: CONNECTIONS,
    duration: LOAD_SECONDS,
    headers: { authorization: `Bearer ${key}` },
  });
  if (result.non2xx > 0) throw new Error(`${path}: ${result.non2xx} answers were not 2xx`);
  return result.requests.average;
}

/** The bench's parts; `--parts` runs some (without `replay`, the cached data set's read models are used). */
const PARTS = ['replay', 'pages', 'diff', 'export'] as const;
type Part = (typeof PARTS)[number];

async function benchSize(projects: number, parts: ReadonlySet<Part>, rounds: number): Promise<void> {
  const cached = await ensureDataSet(dataSetSpec(projects));
  const dir = mkdtempSync(join(tmpdir(), `pulseboard-history-bench-${projects}-`));
  try {
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(join(cached, `events.sqlite${suffix}`)))
        copyFileSync(join(cached, `events.sqlite${suffix}`), join(dir, `events.sqlite${suffix}`));
    }
    const log = createSqliteEventLog(join(dir, 'events.sqlite'));
    const head = await log.headPosition();
    process.stdout.write(`\n${projects} projects, ${head} log positions\n`);

    const withPath = join(dir, 'readmodels.sqlite');
    if (parts.has('replay')) await benchReplay(log, dir, withPath, rounds);
    else copyFileSync(join(cached, 'readmodels.sqlite'), withPath);
    const db = new DatabaseSync(withPath, { readOnly: true });

    // Points: the middle of the log, and the last 10 % of the board's writes for the diff.
    const mid = Math.floor(head / 2);
    const tenth = db
      .prepare('SELECT valid_from FROM history_versions WHERE valid_to > ? ORDER BY valid_from DESC LIMIT 1 OFFSET ?')
      .get(head, Math.floor(projects / 10)) as { valid_from: number } | undefined;
    const from = tenth?.valid_from ?? 0;
    db.close();
    await benchReads({ projects, dir, log, head, mid, from, withPath, parts });
    await log.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One replay in a process of its own (bench/replay-once.ts), as `pulseboard replay` runs; its milliseconds. */
function replayInChild(events: string, target: string, plain: boolean): number {
  const child = spawnSync(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      join(import.meta.dirname, 'replay-once.ts'),
      events,
      target,
      ...(plain ? ['--plain'] : []),
    ],
    { encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(`the replay failed (${child.status}): ${child.stderr}`);
  return (JSON.parse(child.stdout) as { ms: number }).ms;
}

/**
 * Replay without the history (the projects projector not versioned), then with it into `withPath`, against
 * the raw baseline. With `rounds` above 1 the replay with the history and the raw baseline are measured
 * again, each round's ratio from a replay and a baseline taken one after the other (this host's speed
 * drifts by more than the gains being measured), and the median ratio is reported.
 */
async function benchReplay(
  log: ReturnType<typeof createSqliteEventLog>,
  dir: string,
  withPath: string,
  rounds: number,
): Promise<void> {
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
    process.stdout.write(`${label}replay: ${seconds(withMs)} with the history${without}\n`);
    process.stdout.write(
      `  raw baseline: read of the log (${read.value} events) ${seconds(read.ms)} + inserts of the ${inserted.rows} rows of the replayed file ${seconds(inserted.ms)} = ${seconds(rawMs)}: ` +
        `replay/raw ${(withMs / rawMs).toFixed(2)}x (goal <= 2)\n`,
    );
  }
  if (rounds > 1)
    process.stdout.write(
      `replay/raw, median of ${rounds} rounds: ${median(ratios).toFixed(2)}x (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}; goal <= 2)\n`,
    );
  const db = new DatabaseSync(withPath, { readOnly: true });
  const versions = (db.prepare('SELECT count(*) AS n FROM history_versions').get() as { n: number }).n;
  const sizeOf = (path: string) => statSync(path).size;
  const perWrite = (sizeOf(withPath) - sizeOf(plainPath)) / Math.max(1, versions);
  rmSync(plainPath, { force: true });
  process.stdout.write(
    `history: ${versions} writes, ${(perWrite / 1024).toFixed(2)} KiB on disk per write (file ${(sizeOf(withPath) / 2 ** 20).toFixed(0)} MiB)\n`,
  );
  db.close();
}

type ReadsBench = {
  projects: number;
  dir: string;
  log: ReturnType<typeof createSqliteEventLog>;
  head: number;
  /** The middle of the log (as-of pages) and the start of the last 10 % of the board's writes (the diff). */
  mid: number;
  from: number;
  withPath: string;
  parts: ReadonlySet<Part>;
};

/** The as-of pages, the diff and the export over HTTP and the CLI, against their baselines. */
async function benchReads({ projects, dir, log, head, mid, from, withPath, parts }: ReadsBench): Promise<void> {
  {
    const key = await benchKey(dir);
    const archive = await log.archiveId();
    const cursorAt = (seq: number) => namedPoint(archive, { seq, at: null }).cursor;
    const server = await startServer(['app', dir]);
    try {
      const total = (await (
        await fetch(`http://127.0.0.1:${server.port}/v1/projects?page=1&asOf=${cursorAt(mid)}`, {
          headers: { authorization: `Bearer ${key}` },
        })
      ).json()) as {
        totalPages: number;
      };
      const liveTotal = (await (
        await fetch(`http://127.0.0.1:${server.port}/v1/projects?page=1`, {
          headers: { authorization: `Bearer ${key}` },
        })
      ).json()) as { totalPages: number };
      if (parts.has('pages'))
        for (const [label, livePage, pastPage] of [
          ['first', 1, 1],
          ['middle', Math.ceil(liveTotal.totalPages / 2), Math.ceil(total.totalPages / 2)],
          ['last', liveTotal.totalPages, total.totalPages],
        ] as const) {
          const live = await load(server.port, `/v1/projects?page=${livePage}`, key);
          const past = await load(server.port, `/v1/projects?page=${pastPage}&asOf=${cursorAt(mid)}`, key);
          const latest = await load(server.port, `/v1/projects?page=${livePage}&asOf=${cursorAt(head)}`, key);
          process.stdout.write(
            `board ${label} page: live ${live.toFixed(0)} req/s; as of the middle ${past.toFixed(0)} req/s (${(live / past).toFixed(2)}x the live time); ` +
              `as of the head ${latest.toFixed(0)} req/s (${(live / latest).toFixed(2)}x)\n`,
          );
        }

      const raw = new DatabaseSync(withPath, { readOnly: true });
      if (parts.has('diff')) {
        // The diff of the last ~10 % of the board, every page, vs a raw SELECT of the same rows, walked
        // as a user of the client does: each page asked for once the one before names it (Link header).
        // Uncompressed, as the read bench measures reads (compression has its own bench): a loopback address.
        const client = createClient({ baseUrl: `http://127.0.0.1:${server.port}`, key });
        const walkDiff = async (prefetch = true) => {
          let rows = 0;
          for await (const step of client.projects.diffPages({
            from: cursorAt(from),
            to: cursorAt(head),
            limit: 100,
            prefetch,
          })) {
            if (!step.ok) throw new Error(`diff walk: ${step.error.message}`);
            rows += step.page.changes.length;
          }
          return rows;
        };
        // The median of DIFF_WALKS walks, after one that warms the path up (a walk is short: one is noise);
        // beside it, in turn with it, walks that ask for each page once the one before is parsed.
        await walkDiff();
        const walks = await mediansOf(walkDiff, () => walkDiff(false));
        const [diff, inTurn] = [walks[0]!, walks[1]!];
        const readRaw = async () => {
          const rows = raw
            .prepare(
              `SELECT a.id, CAST(${versionDoc('a.', 'ta.')} AS TEXT) AS doc, CAST(${versionDoc('b.', 'tb.')} AS TEXT) AS before
            FROM history_versions a LEFT JOIN history_versions b ON b.rowid = (SELECT rowid FROM history_versions
              WHERE collection = a.collection AND id = a.id AND valid_from <= ?1 ORDER BY valid_from DESC LIMIT 1)
            LEFT JOIN history_shared_texts ta ON ta.rowid = a.shared_text LEFT JOIN history_shared_texts tb ON tb.rowid = b.shared_text
            WHERE a.collection = 'projects' AND a.valid_from > ?1 AND a.valid_to > ?2`,
            )
            .all(from, head) as { doc: string; before: string | null }[];
          return rows.map((r) => [JSON.parse(r.doc), r.before === null ? null : JSON.parse(r.before)]).length;
        };
        await readRaw();
        const rawRead = await medianOf(readRaw);
        process.stdout.write(
          `diff of ${diff.value} projects (${((diff.value / projects) * 100).toFixed(1)} % of the board), paged over HTTP: ${diff.ms.toFixed(0)} ms ` +
            `(${inTurn.ms.toFixed(0)} ms without prefetch); ` +
            `raw SELECT and parse of the same ${rawRead.value} rows: ${rawRead.ms.toFixed(0)} ms (medians of ${DIFF_WALKS}): ${(rawRead.ms / diff.ms).toFixed(2)} of the raw read's speed\n`,
        );
      }
      if (parts.has('export')) {
        // The Parquet export vs raw SELECTs of the same rows (the board's versions, the calls, the events).
        const out = join(dir, 'export');
        mkdirSync(out);
        const store = createSqliteReadStore(withPath);
        const exported = await timed(() =>
          exportAsOf({
            log,
            store,
            point: { seq: head, at: null },
            named: namedPoint(archive, { seq: head, at: null }),
            format: 'parquet',
            dir: out,
          }),
        );
        await store.close();
        const rawExport = await timed(async () => {
          let n = 0;
          for (const row of raw
            .prepare(
              `SELECT CAST(${versionDoc('v.', 't.')} AS TEXT) AS doc FROM history_versions AS v
                LEFT JOIN history_shared_texts AS t ON t.rowid = v.shared_text WHERE v.collection = ? AND v.valid_to > ?`,
            )
            .iterate('projects', head) as Iterable<{ doc: string }>) {
            JSON.parse(row.doc);
            n++;
          }
          for (const row of raw
            .prepare("SELECT doc FROM docs WHERE collection = 'calls' AND facet = 'visible'")
            .iterate() as Iterable<{ doc: string }>) {
            JSON.parse(row.doc);
            n++;
          }
          const events = new DatabaseSync(join(dir, 'events.sqlite'), { readOnly: true });
          const columns = (
            events.prepare("SELECT name FROM pragma_table_info('events')").all() as { name: string }[]
          ).map((c) => c.name);
          for (const _row of events.prepare(`SELECT ${columns.join(', ')} FROM events`).iterate()) n++;
          events.close();
          return n;
        });
        const { projects: p, calls, events } = exported.value;
        process.stdout.write(
          `parquet export: ${p} projects, ${calls} calls, ${events} events in ${seconds(exported.ms)}; raw SELECTs of the same rows ${seconds(rawExport.ms)}: ` +
            `${(rawExport.ms / exported.ms).toFixed(2)} of the raw read's speed\n`,
        );
        for (const asStart of [false, true]) {
          const out = join(dir, `export-cli-${String(asStart)}`);
          const cli = exportPeakRss(dir, out, asStart);
          rmSync(out, { recursive: true, force: true });
          process.stdout.write(
            `pulseboard export --format parquet (CLI, as of the head${asStart ? ", with npm start's node flags and env" : ', plain node'}): ` +
              `peak RSS ${(cli.maxRssKiB / 1024).toFixed(0)} MiB in ${seconds(cli.ms)}\n`,
          );
        }
      }
      raw.close();
    } finally {
      await server.stop();
    }
  }
}

export async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { projects: { type: 'string' }, parts: { type: 'string' }, rounds: { type: 'string' } },
    strict: false,
  });
  const rounds = values.rounds !== undefined ? Number(values.rounds) : 1;
  if (!Number.isSafeInteger(rounds) || rounds < 1) throw new Error('--rounds: a whole number of at least 1');
  const sizes = values.projects !== undefined ? [Number(values.projects)] : [10_000, 100_000];
  const given = typeof values.parts === 'string' ? values.parts.split(',') : PARTS;
  const unknown = given.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (unknown.length > 0) throw new Error(`--parts: unknown ${unknown.join(', ')} (known: ${PARTS.join(', ')})`);
  const parts = new Set(given as Part[]);
  process.stdout.write('History bench (issue 43). Figures taken on a shared machine: compare ratios within one run.\n');
  for (const projects of sizes) await benchSize(projects, parts, rounds);
}

if (import.meta.main) await main();
