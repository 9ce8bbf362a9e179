/**
 * The history read model's reads at 10k and 100k projects (`--only N`), on the cached data sets (read,
 * never written), each against a baseline of the same run: as-of board pages against the live page at
 * the same depth; a diff of about 10 % of the board paged by the client against a raw SELECT and parse;
 * the Parquet export against raw SELECTs, and the CLI export's peak RSS. Its replay: bench/write-paths.bench.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createSqliteEventLog } from '../eventstore/sqlite/sqlite-event-log.ts';
import { versionDoc } from '../readmodels/sqlite/sqlite-history.ts';
import { createSqliteReadStore } from '../readmodels/sqlite/sqlite-read-store.ts';
import { exportAsOf } from '../service/analyst-export.ts';
import { namedPoint } from '../service/history-board.ts';
import { createClient } from '../client/index.ts';
import { benchKey, benchSizes, dataSetSpec, ensureDataSet } from './dataset.ts';
import { median, timed } from './median.ts';
import { loadOn, startServer } from './servers.ts';

type Log = ReturnType<typeof createSqliteEventLog>;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const say = (line: string) => process.stdout.write(`${line}\n`);

/** `pulseboard export --format parquet` over `dataDir` in a child process, and its peak resident set. */
function exportPeakRss(dataDir: string, out: string): { maxRssKiB: number; ms: number } {
  // VmHWM is the peak of this program's own memory: getrusage's maxRSS also counts the forked bench's
  // resident set from before the exec (Linux keeps the larger).
  const report =
    'process.on("exit",()=>{const m=/VmHWM:\\s*(\\d+)/.exec(process.getBuiltinModule("node:fs").readFileSync("/proc/self/status","utf8"));' +
    'process.stderr.write("maxrss "+(m?m[1]:process.resourceUsage().maxRSS)+"\\n")})';
  const started = performance.now();
  const cli = join(import.meta.dirname, '..', 'bin', 'pulseboard.ts');
  const args = ['--import', `data:text/javascript,${encodeURIComponent(report)}`, cli, 'export', '--format=parquet'];
  const child = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', ...args, `--out=${out}`], {
    env: { ...process.env, PULSEBOARD_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  const ms = performance.now() - started;
  const found = /maxrss (\d+)/.exec(child.stderr);
  if (child.status !== 0 || !found) throw new Error(`pulseboard export failed (${child.status}): ${child.stderr}`);
  return { maxRssKiB: Number(found[1]), ms };
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

async function benchSize(projects: number): Promise<void> {
  const dir = await ensureDataSet(dataSetSpec(projects));
  // The cached data set is only read: what the bench writes goes to a directory of its own.
  const work = mkdtempSync(join(tmpdir(), `pulseboard-history-bench-${projects}-`));
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  try {
    say(`\n${projects} projects, ${await log.headPosition()} log positions`);
    await benchReads(projects, dir, work, log);
  } finally {
    await log.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The as-of pages, the diff and the export over HTTP and the CLI, against their baselines. */
async function benchReads(projects: number, dir: string, work: string, log: Log) {
  const key = await benchKey(dir);
  const archive = await log.archiveId();
  const cursorAt = (seq: number) => namedPoint(archive, { seq, at: null }).cursor;
  const server = await startServer(['app', dir]);
  const base = `http://127.0.0.1:${server.port}`;
  const raw = new DatabaseSync(join(dir, 'readmodels.sqlite'), { readOnly: true });
  // Points: the middle of the log (as-of pages), and the start of the last 10 % of the board's writes (the diff).
  const head = await log.headPosition();
  const mid = Math.floor(head / 2);
  const tenth = raw
    .prepare('SELECT valid_from FROM history_versions WHERE valid_to > ? ORDER BY valid_from DESC LIMIT 1 OFFSET ?')
    .get(head, Math.floor(projects / 10)) as { valid_from: number } | undefined;
  const from = tenth?.valid_from ?? 0;
  try {
    const auth = { authorization: `Bearer ${key}` };
    const totalPages = async (query: string) =>
      ((await (await fetch(`${base}/v1/projects?page=1${query}`, { headers: auth })).json()) as { totalPages: number })
        .totalPages;
    const [live, past] = [await totalPages(''), await totalPages(`&asOf=${cursorAt(mid)}`)];
    for (const [label, at] of Object.entries({ first: 0, middle: 0.5, last: 1 })) {
      const page = (total: number) => Math.max(1, Math.ceil(total * at));
      const liveRps = (await loadOn(server, `/v1/projects?page=${page(live)}`, auth)).rps;
      const pastRps = (await loadOn(server, `/v1/projects?page=${page(past)}&asOf=${cursorAt(mid)}`, auth)).rps;
      say(
        `board ${label} page: live ${liveRps.toFixed(0)} req/s; as of the middle ${pastRps.toFixed(0)} req/s: ${(liveRps / pastRps).toFixed(2)}x the live time (goal <= 3)`,
      );
    }
    // The diff of the last ~10 % of the board, walked as a user of the client does (each page asked
    // for once the one before names it), uncompressed, against a raw SELECT and parse of the same rows.
    const client = createClient({ baseUrl: base, key });
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
    const out = join(work, 'export');
    mkdirSync(out);
    const store = createSqliteReadStore(join(dir, 'readmodels.sqlite'));
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
    const cli = exportPeakRss(dir, join(work, 'export-cli'));
    say(
      `pulseboard export --format parquet (the CLI, as of the head): peak RSS ${(cli.maxRssKiB / 1024).toFixed(0)} MiB in ${seconds(cli.ms)} (goal <= 300 MB)`,
    );
  } finally {
    raw.close();
    await server.stop();
  }
}

export async function main(): Promise<void> {
  say('History bench. Figures taken on a shared machine: compare ratios within one run.');
  for (const projects of benchSizes([10_000, 100_000])) await benchSize(projects);
}

if (import.meta.main) await main();
