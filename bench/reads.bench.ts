/**
 * Reads that cost the page, not the archive (issue 12), over real HTTP on 127.0.0.1. Every figure is
 * printed with its baseline measured in the same run:
 *   - mirror of the board by delta paging (limit 100) vs one raw SELECT of the same rows in (seq, id) order,
 *     and the time of a page at 90 % depth vs one at 10 % (and per byte served: later pages hold more).
 *     The SELECT reads the documents' bytes without parsing them, so the mirror that the ratio compares
 *     reads each page's bytes too (uncompressed, one keep-alive socket read into reused buffers:
 *     raw-http.ts) and decodes only its envelope (cursor, hasMore). Printed beside it: the same pages
 *     sent by bare Fastify to the same client (the floor HTTP sets), the mirror through node:http (and
 *     bare Fastify's pages through it) and through fetch, and one that takes compressed pages and parses
 *     every one (res.json());
 *   - board pages by number read once each (a page's first read after a commit): pages near the middle
 *     vs pages near the front, beside the raw SQLite index walk to the middle page that such a read cost
 *     before the listing chunks (readmodels/list-chunks.ts);
 *   - req/s of each read under load (autocannon) vs bare Fastify sending the very same bytes, in rounds
 *     (PULSEBOARD_BENCH_ROUNDS, default 5, of PULSEBOARD_BENCH_SECONDS, default 2, per load), each round
 *     loading the service and its baselines back to back: each ratio is the median of the rounds' ratios;
 *   - MCP get_project vs its REST twin, in rounds the same way; the last board page vs page 1; server RSS after the load.
 * Data sets are built once and cached (bench/dataset.ts; `--rebuild` builds them again). The default
 * run measures 10k and 100k projects; `--scale` adds 1M (8 days of history per project) and is meant
 * to run outside CI. `--quick` measures 10k only; `--only N` measures N projects only.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS } from '../projectors/projects.ts';
import { readPointer, generationPath } from '../readmodels/sqlite/generations.ts';
import { issueKey } from '../service/access.ts';
import { openStores } from '../service/stores.ts';
import { benchConfig, dataSetSpec, ensureDataSet, type DataSetSpec } from './dataset.ts';
import { connectRawHttp } from './raw-http.ts';
import type { RecordedBody } from './reads-server.ts';
import { processCpuMicros } from './process-cpu.ts';
import { replayable, startServer, type Server } from './servers.ts';
import { median } from './median.ts';
import { cpuTimes, stolenSince } from './steal.ts';

type LoadResult = {
  requests: { average: number; total: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
};
type LoadOptions = {
  url: string;
  connections: number;
  duration: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
};
const autocannon = createRequire(import.meta.url)('autocannon') as (options: LoadOptions) => Promise<LoadResult>;

const LOAD_SECONDS = Number(process.env.PULSEBOARD_BENCH_SECONDS ?? '2');
/** Rounds of each read's loads (service, then baselines); the figures are their medians. */
const ROUNDS = Number(process.env.PULSEBOARD_BENCH_ROUNDS ?? '5');
const CONNECTIONS = 10;
const out = (line = '') => process.stdout.write(`${line}\n`);
const ms = (ns: bigint) => Number(ns) / 1e6;

/**
 * Resident memory of a process in MB (Linux /proc): all of it, its peak, and the part that is the
 * process's own (anonymous) rather than mapped file pages (Node's own files and, with
 * PULSEBOARD_SQLITE_MAP_MB set, the read models' memory map).
 */
function memoryOf(pid: number): { rss: number; peak: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024, anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
}

/**
 * Where a process's own (anonymous) memory is, from /proc/PID/smaps, in MB: the main malloc heap
 * ([heap], grown by brk: the main thread's mallocs, SQLite's page cache of the serving connections
 * among them), glibc's other malloc arenas (mappings that start on a 64 MiB boundary: one per thread
 * that mallocs, e.g. libuv's pool compressing responses, up to MALLOC_ARENA_MAX), and the rest of the
 * anonymous mappings (V8's heap, thread stacks, large allocations).
 */
function anonymousMemoryOf(pid: number): string {
  let brk = 0;
  let arenas = 0;
  let arenaCount = 0;
  let other = 0;
  let kind: 'brk' | 'arena' | 'other' | null = null;
  let mappingKb = 0;
  // The largest of the other anonymous mappings (resident kB, mapping kB): where a run's unusual growth went.
  const largest: { kb: number; of: number }[] = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const path = header[3]!;
      const start = BigInt(`0x${header[1]}`);
      mappingKb = Number((BigInt(`0x${header[2]}`) - start) / 1024n);
      kind = path === '[heap]' ? 'brk' : path === '' ? (start % (64n << 20n) === 0n ? 'arena' : 'other') : null;
      if (kind === 'arena') arenaCount += 1;
      continue;
    }
    const anonymous = /^Anonymous:\s+(\d+) kB/.exec(line);
    if (!anonymous || kind === null) continue;
    const kb = Number(anonymous[1]);
    if (kind === 'brk') brk += kb;
    else if (kind === 'arena') arenas += kb;
    else {
      other += kb;
      largest.push({ kb, of: mappingKb });
      largest.sort((a, b) => b.kb - a.kb);
      largest.length = Math.min(largest.length, 3);
    }
  }
  const mb = (kb: number) => (kb / 1024).toFixed(0);
  const top = largest.map((m) => `${mb(m.kb)} of ${mb(m.of)}`).join(', ');
  return `malloc main heap ${mb(brk)}, other malloc arenas ${mb(arenas)} (${arenaCount} mappings on 64 MiB boundaries), other anonymous (V8 heap, stacks, large blocks) ${mb(other)} (largest: ${top})`;
}

/** A key for the bench, issued once per cached data set (issuing appends to its log). */
export async function benchKey(dir: string): Promise<string> {
  const file = join(dir, 'bench-key.txt');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const stores = await openStores(benchConfig(dir));
  try {
    const { key } = await issueKey(stores, 'bench');
    await stores.catchUp();
    writeFileSync(file, `${key}\n`);
    return key;
  } finally {
    await stores.close();
  }
}

async function load(
  port: number,
  path: string,
  extra: Omit<LoadOptions, 'url' | 'connections' | 'duration'> = {},
): Promise<LoadResult> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    connections: CONNECTIONS,
    duration: LOAD_SECONDS,
    ...extra,
  });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${path}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts under load`,
    );
  }
  return result;
}

/** A load with the server's CPU a request over it (µs of the server process alone; NaN where /proc cannot say). */
async function loadOn(
  server: Server,
  path: string,
  extra: Omit<LoadOptions, 'url' | 'connections' | 'duration'> = {},
): Promise<{ result: LoadResult; cpuUs: number }> {
  const before = processCpuMicros(server.pid);
  const result = await load(server.port, path, extra);
  const after = processCpuMicros(server.pid);
  return { result, cpuUs: before === null || after === null ? Number.NaN : (after - before) / result.requests.total };
}

type SizeResult = {
  projects: number;
  mirrorSeconds: number;
  selectSeconds: number;
  depth10Ms: number;
  depth90Ms: number;
  /** Median first read of a board page by number: pages near the front, and around the middle. */
  frontPageMs: number;
  middlePageMs: number;
  rps: Record<string, number>;
  bareRps: Record<string, number>;
  mcpRps: number;
  rss: number;
};

/** The envelope members after a delta page's `projects` array: read from the last bytes of the page. */
const ENVELOPE_TAIL_BYTES = 1024;
const CURSOR_MEMBER = /"cursor":"([A-Za-z0-9_-]+)","hasMore":(true|false),"limit":(\d+),"readAt":"[^"]*"\}$/;

/**
 * How a mirror reads its pages: `raw` one keep-alive socket read into reused buffers (raw-http.ts:
 * the client allocates nothing per page, so the walk's time is the server's and HTTP's); `http`
 * node:http with a keep-alive agent, reading the bytes; `fetch` fetch (undici), reading the bytes;
 * `parsed` fetch taking what it asks for by default (gzip or br, decompressed by the client) and
 * parsing every page whole (res.json()), as a client that decodes every project does. The first
 * three ask for the bytes as they are (`Accept-Encoding: identity`), as the SELECT reads them.
 */
type MirrorClient = 'raw' | 'http' | 'fetch' | 'parsed';

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

function httpGet(url: string, headers: Record<string, string>): Promise<{ status: number; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: keepAlive }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/**
 * Mirrors the board by delta paging, as the delta-sync consumer does; returns the time and per-page
 * times. Unless the client parses, a page's bytes are read and only its envelope (cursor, hasMore:
 * the last bytes) is decoded, which is what the one-SELECT baseline does too (it reads the stored
 * documents' bytes without parsing them); a page with hasMore holds exactly `limit` rows, the last
 * page is parsed to count its rows. `record`: each page's URL and body, for a bare server to send again.
 */
async function mirror(
  port: number,
  headers: Record<string, string>,
  client: MirrorClient,
  filter = '',
  record?: { url: string; bytes: Buffer }[],
): Promise<{ seconds: number; pages: number[]; bytes: number[]; rows: number; cursors: string[] }> {
  const pages: number[] = [];
  const sizes: number[] = [];
  const cursors: string[] = [];
  let rows = 0;
  let path = `/v1/projects?since=1970-01-01T00:00:00Z&limit=100${filter}`;
  const identity = { ...headers, 'accept-encoding': 'identity' };
  const raw = client === 'raw' ? await connectRawHttp(port) : null;
  const started = process.hrtime.bigint();
  for (;;) {
    const t = process.hrtime.bigint();
    const url = `http://127.0.0.1:${port}${path}`;
    let status: number;
    let cursor: string;
    let hasMore: boolean;
    if (client === 'parsed') {
      const res = await fetch(url, { headers });
      status = res.status;
      const page = (await res.json()) as { projects: unknown[]; cursor: string; hasMore: boolean };
      ({ cursor, hasMore } = page);
      rows += page.projects.length;
      // Compressed: its size on the wire is not the page's, and this walk's depth is not compared.
      sizes.push(Number.NaN);
    } else {
      let bytes: Buffer;
      if (raw) ({ status, body: bytes } = await raw.get(path, identity));
      else if (client === 'http') ({ status, bytes } = await httpGet(url, identity));
      else {
        const res = await fetch(url, { headers: identity });
        status = res.status;
        bytes = Buffer.from(await res.arrayBuffer());
      }
      const envelope = CURSOR_MEMBER.exec(bytes.toString('utf8', Math.max(0, bytes.length - ENVELOPE_TAIL_BYTES)));
      if (!envelope) throw new Error(`mirror page ${pages.length + 1}: no delta envelope at the end of the page`);
      cursor = envelope[1]!;
      hasMore = envelope[2] === 'true';
      rows += hasMore
        ? Number(envelope[3])
        : (JSON.parse(bytes.toString('utf8')) as { projects: unknown[] }).projects.length;
      sizes.push(bytes.length);
      // The raw client's body is a view of a buffer it reuses: a copy is kept.
      record?.push({ url: path, bytes: raw ? Buffer.from(bytes) : bytes });
    }
    pages.push(ms(process.hrtime.bigint() - t));
    if (status !== 200) throw new Error(`mirror page ${pages.length}: ${status}`);
    cursors.push(cursor);
    if (!hasMore) break;
    path = `/v1/projects?cursor=${cursor}&limit=100${filter}`;
  }
  raw?.close();
  return { seconds: ms(process.hrtime.bigint() - started) / 1000, pages, bytes: sizes, rows, cursors };
}

/** The data set's serving read models, read-only, for the raw SQLite baselines. */
function openReadModels(dir: string): DatabaseSync {
  const pointer = readPointer(dir);
  return new DatabaseSync(generationPath(dir, pointer.ok ? pointer.generation : 0), { readOnly: true });
}

/** The baseline of the mirror: one SELECT of the same documents, in (seq, id) order, read to the end. */
function selectAll(dir: string): { seconds: number; rows: number } {
  const db = openReadModels(dir);
  try {
    const started = process.hrtime.bigint();
    let rows = 0;
    const statement = db.prepare(
      `SELECT doc FROM docs WHERE collection = ? AND facet IN (${PUBLIC_PROJECT_FACETS.map(() => '?').join(',')}) ORDER BY seq, id`,
    );
    for (const row of statement.iterate(PROJECTS_COLLECTION, ...PUBLIC_PROJECT_FACETS)) if (row) rows += 1;
    return { seconds: ms(process.hrtime.bigint() - started) / 1000, rows };
  } finally {
    db.close();
  }
}

/**
 * Median time of the pages around a depth (a fraction of the walk), 5 % of the pages wide (at least 5):
 * the median, so that a page slowed by another process on the machine does not decide the figure.
 */
function pagesAround(pages: readonly number[], depth: number): number {
  const width = Math.max(5, Math.round(pages.length * 0.05));
  const from = Math.min(
    Math.max(0, Math.round(pages.length * depth) - Math.floor(width / 2)),
    Math.max(0, pages.length - width),
  );
  const window = pages.slice(from, from + width).sort((a, b) => a - b);
  return window[Math.floor(window.length / 2)]!;
}

/**
 * Board pages by number, each read once through the raw client: every read is a page's first (no
 * kept body answers it), as the first read of a page after a commit is. Times in ms, one a page.
 */
async function boardPagesOnce(
  port: number,
  headers: Record<string, string>,
  pages: readonly number[],
): Promise<number[]> {
  const raw = await connectRawHttp(port);
  try {
    const times: number[] = [];
    for (const page of pages) {
      const t = process.hrtime.bigint();
      const { status } = await raw.get(`/v1/projects?page=${page}`, { ...headers, 'accept-encoding': 'identity' });
      times.push(ms(process.hrtime.bigint() - t));
      if (status !== 200) throw new Error(`board page ${page}: ${status}`);
    }
    return times;
  } finally {
    raw.close();
  }
}

/**
 * The index walk alone to the board's middle page from its nearer end (raw SQLite, the rows' ids
 * only): what the first read of a middle page cost before the listing chunks (ms, median of 5).
 */
function middleWalkMs(dir: string): number {
  const db = openReadModels(dir);
  try {
    const facets = PUBLIC_PROJECT_FACETS.map(() => '?').join(',');
    const total = (
      db
        .prepare(`SELECT COUNT(*) AS n FROM docs WHERE collection = ? AND facet IN (${facets})`)
        .get(PROJECTS_COLLECTION, ...PUBLIC_PROJECT_FACETS) as { n: number }
    ).n;
    const walk = db.prepare(
      `SELECT rowid FROM docs WHERE collection = ? AND facet IN (${facets}) ORDER BY sort_key DESC, id DESC LIMIT 50 OFFSET ?`,
    );
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = process.hrtime.bigint();
      walk.all(PROJECTS_COLLECTION, ...PUBLIC_PROJECT_FACETS, Math.floor(total / 2));
      times.push(ms(process.hrtime.bigint() - t));
    }
    return median(times);
  } finally {
    db.close();
  }
}

async function benchSize(spec: DataSetSpec): Promise<SizeResult> {
  out(`\n-- ${spec.projects} projects (${spec.calls} calls, ${spec.days} days)`);
  const dir = await ensureDataSet(spec, (line) => out(line));
  const key = await benchKey(dir);
  const headers = { authorization: `Bearer ${key}` };
  const app = await startServer(['app', dir]);
  const work = mkdtempSync(join(tmpdir(), 'pulseboard-reads-bench-'));
  try {
    // Warm the page cache the way the baseline SELECT will find it, and the server with walks of the
    // projects with a dossier and of those without (every project once, through other cursors): the
    // measured walk meets a server in its steady state (its code optimized, its file mapped), as a
    // running service is, and still reads each of its pages for the first time, as one mirror does
    // (a body cache keeps a page from its second read on); the parsed walk then reads the same
    // cursors again, so it is the one that fills the cache.
    selectAll(dir);
    await mirror(app.port, headers, 'raw', '&has_dossier=true');
    await mirror(app.port, headers, 'raw', '&has_dossier=false');
    const walk = await mirror(app.port, headers, 'raw');
    // The walks through other clients read the same cursors again: a body cache keeps a page from
    // its second read on, within its bound (24 MiB: the last pages of a large walk).
    const httpWalk = await mirror(app.port, headers, 'http');
    const fetchWalk = await mirror(app.port, headers, 'fetch');
    const parsedWalk = await mirror(app.port, headers, 'parsed');
    // The pages, for the bare server: recorded by a walk of their own, so that no measured walk keeps
    // a whole board's bytes alive in the client (its collections would slow the walks that follow).
    const pagesServed: { url: string; bytes: Buffer }[] = [];
    await mirror(app.port, headers, 'raw', '', pagesServed);
    const select = selectAll(dir);
    if ([walk, httpWalk, fetchWalk, parsedWalk].some((w) => w.rows !== select.rows)) {
      throw new Error(
        `the mirror served ${walk.rows} projects (node:http: ${httpWalk.rows}, fetch: ${fetchWalk.rows}, parsed: ${parsedWalk.rows}), the SELECT reads ${select.rows}`,
      );
    }
    // The floor HTTP and the client set: bare Fastify sending the very pages, mirrored by the same client.
    // One page a line: at 1M the pages are more text than one JS string holds.
    const pagesFile = join(work, 'pages.ndjson');
    const pagesOut = openSync(pagesFile, 'w');
    try {
      for (const { url, bytes } of pagesServed) {
        const page: RecordedBody = {
          method: 'GET',
          url,
          contentType: 'application/json; charset=utf-8',
          body: bytes.toString('utf8'),
        };
        writeSync(pagesOut, `${JSON.stringify(page)}\n`);
      }
    } finally {
      closeSync(pagesOut);
    }
    pagesServed.length = 0;
    const barePages = await startServer(['bare', pagesFile]);
    let bareWalk: Awaited<ReturnType<typeof mirror>>;
    let bareHttpWalk: Awaited<ReturnType<typeof mirror>>;
    try {
      await mirror(barePages.port, {}, 'raw');
      bareWalk = await mirror(barePages.port, {}, 'raw');
      bareHttpWalk = await mirror(barePages.port, {}, 'http');
    } finally {
      await barePages.stop();
    }
    const depth10Ms = pagesAround(walk.pages, 0.1);
    const depth90Ms = pagesAround(walk.pages, 0.9);
    // Later delta pages hold later-written projects, which carry more (dossiers): the depth's own cost is
    // the time per byte served, which a range bounded on both sides keeps the same at any depth.
    const perByte = walk.pages.map((t, i) => t / walk.bytes[i]!);
    const depthPerByte = pagesAround(perByte, 0.9) / pagesAround(perByte, 0.1);
    const bytesAt = (depth: number) => pagesAround(walk.bytes, depth);
    const versus = (w: { seconds: number }) =>
      `${w.seconds.toFixed(2)} s; ratio ${(select.seconds / w.seconds).toFixed(3)}`;
    out(
      `mirror: ${walk.rows} projects in ${walk.pages.length} pages, ${walk.seconds.toFixed(2)} s; one SELECT of the same rows ${select.seconds.toFixed(3)} s; ratio ${(select.seconds / walk.seconds).toFixed(3)}`,
    );
    out(
      `  (the same pages from bare Fastify, the same client: ${versus(bareWalk)}; the floor HTTP and the client set)`,
    );
    out(
      `  (mirror through node:http instead: ${versus(httpWalk)}, from bare Fastify ${versus(bareHttpWalk)}; through fetch: ${versus(fetchWalk)};`,
    );
    out(`   compressed as fetch asks by default and parsing every page with res.json(): ${versus(parsedWalk)})`);
    // Pages that took over 3x the walk's median, and their share of it: stalls (a process kept off the
    // CPU, a collection) that move the figure from run to run, told apart from the cost of a page.
    const medianPage = median(walk.pages);
    const stalled = walk.pages.filter((t) => t > 3 * medianPage);
    out(
      `  (median page ${medianPage.toFixed(2)} ms; pages over 3x the median: ${stalled.length}, ${stalled.reduce((sum, t) => sum + t, 0).toFixed(0)} ms of the walk)`,
    );
    out(
      `median page time at 10 % depth ${depth10Ms.toFixed(2)} ms, at 90 % depth ${depth90Ms.toFixed(2)} ms; 90 %/10 % ${(depth90Ms / depth10Ms).toFixed(2)}x`,
    );
    out(
      `  (median page ${(bytesAt(0.1) / 1024).toFixed(0)} KiB at 10 % depth, ${(bytesAt(0.9) / 1024).toFixed(0)} KiB at 90 %; time per byte served 90 %/10 % ${depthPerByte.toFixed(2)}x)`,
    );

    const first = (await (await fetch(`http://127.0.0.1:${app.port}/v1/projects`, { headers })).json()) as {
      projects: { id: string }[];
      totalPages: number;
    };
    const calls = (await (
      await fetch(`http://127.0.0.1:${app.port}/v1/calltracker/calls?limit=30`, { headers })
    ).json()) as {
      calls: { tokens: { contract: string }[] }[];
    };
    const contract =
      calls.calls.flatMap((c) => c.tokens).find((t) => t.contract.startsWith('0x'))?.contract ??
      calls.calls[0]!.tokens[0]!.contract;
    const projectId = first.projects[0]!.id;
    const midCursor = walk.cursors[Math.floor(walk.cursors.length / 2)]!;

    // Board pages by number, each read once (page 1 and the last page are the load's; these are others).
    const middle = Math.floor(first.totalPages / 2);
    const pagesFrom = (from: number) => Array.from({ length: Math.min(40, first.totalPages - 2) }, (_, i) => from + i);
    const frontPageMs = median(await boardPagesOnce(app.port, headers, pagesFrom(2)));
    const middlePages = pagesFrom(Math.max(2, middle - 20));
    const middlePageMs = median(await boardPagesOnce(app.port, headers, middlePages));
    out(
      `board pages by number, each read once (a page's first read after a commit): pages 2-${pagesFrom(2).at(-1)} median ${frontPageMs.toFixed(2)} ms, ` +
        `pages ${middlePages[0]}-${middlePages.at(-1)} of ${first.totalPages} ${middlePageMs.toFixed(2)} ms; middle/front ${(middlePageMs / frontPageMs).toFixed(2)}x`,
    );
    out(
      `  (the index walk alone to the middle page from the nearer end, raw SQLite, as a middle page was read before listing chunks: ${middleWalkMs(dir).toFixed(2)} ms)`,
    );
    const targets: Record<string, string> = {
      'board page 1': '/v1/projects?page=1',
      [`board last page (${first.totalPages})`]: `/v1/projects?page=${first.totalPages}`,
      'delta page (limit 100, mid depth)': `/v1/projects?cursor=${midCursor}&limit=100`,
      'one project': `/v1/projects/${encodeURIComponent(projectId)}`,
      'call page (limit 30)': '/v1/calltracker/calls?limit=30',
      'search q=0x…': `/v1/search?q=${encodeURIComponent(contract)}`,
    };

    // The baselines answer each URL with the bytes the service sent for it (uncompressed, as autocannon
    // asks): the body alone, and the body with the service's headers (request id, rate limit, ETag…).
    const recorded: RecordedBody[] = [];
    for (const path of Object.values(targets)) {
      const res = await fetch(`http://127.0.0.1:${app.port}${path}`, {
        headers: { ...headers, 'accept-encoding': 'identity' },
      });
      recorded.push({
        method: 'GET',
        url: path,
        contentType: res.headers.get('content-type') ?? 'application/json',
        body: await res.text(),
        headers: replayable(res.headers),
      });
    }
    const bodiesFile = join(work, 'bodies.json');
    writeFileSync(bodiesFile, JSON.stringify(recorded.map(({ headers: _, ...bodyOnly }) => bodyOnly)));
    const withHeadersFile = join(work, 'bodies-with-headers.json');
    writeFileSync(withHeadersFile, JSON.stringify(recorded));
    const bare = await startServer(['bare', bodiesFile]);
    const bareWithHeaders = await startServer(['bare', withHeadersFile]);

    // Warm-up, not counted: the first load otherwise pays for the JIT and the heap growing to its working size.
    for (const path of Object.values(targets))
      await autocannon({ url: `http://127.0.0.1:${app.port}${path}`, connections: CONNECTIONS, duration: 1, headers });
    for (const server of [bare, bareWithHeaders])
      await autocannon({
        url: `http://127.0.0.1:${server.port}${targets['board page 1']!}`,
        connections: CONNECTIONS,
        duration: 1,
      });

    // Rounds, each loading the service and both baselines one after the other (the order reversed
    // every other round): a ratio is the median of its rounds' ratios, each taken from loads seconds
    // apart, so a slow spell of this shared machine moves one round, not the figure.
    const rps: Record<string, number> = {};
    const bareRps: Record<string, number> = {};
    type Sample = {
      served: number;
      p99: number;
      bare: number;
      sameHeaders: number;
      servedCpu: number;
      bareCpu: number;
    };
    const samples = new Map<string, Sample[]>(Object.keys(targets).map((label) => [label, []]));
    const loadsStarted = cpuTimes();
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const [label, path] of Object.entries(targets)) {
          const loads = [
            () => loadOn(app, path, { headers }),
            () => loadOn(bare, path),
            () => loadOn(bareWithHeaders, path),
          ];
          const results: { result: LoadResult; cpuUs: number }[] = [];
          for (const i of round % 2 === 0 ? [0, 1, 2] : [2, 1, 0]) results[i] = await loads[i]!();
          const [served, baseline, sameHeaders] = results as [
            (typeof results)[0],
            (typeof results)[0],
            (typeof results)[0],
          ];
          samples.get(label)!.push({
            served: served.result.requests.average,
            p99: served.result.latency.p99,
            bare: baseline.result.requests.average,
            sameHeaders: sameHeaders.result.requests.average,
            servedCpu: served.cpuUs,
            bareCpu: baseline.cpuUs,
          });
        }
      }
    } finally {
      await bare.stop();
      await bareWithHeaders.stop();
    }
    out(
      `read (median of ${ROUNDS} rounds)                req/s  p99 ms bare req/s  ratio  +headers  ratio  (bytes)  ratio in each round`,
    );
    for (const [label, path] of Object.entries(targets)) {
      const taken = samples.get(label)!;
      rps[label] = median(taken.map((t) => t.served));
      bareRps[label] = median(taken.map((t) => t.bare));
      const ratios = taken.map((t) => t.served / t.bare);
      const bytes = recorded.find((r) => r.url === path)!.body.length;
      out(
        `${label.padEnd(36)} ${rps[label]!.toFixed(0).padStart(8)} ${median(taken.map((t) => t.p99))
          .toFixed(0)
          .padStart(7)} ${bareRps[label]!.toFixed(0).padStart(10)} ${median(ratios).toFixed(3).padStart(6)} ${median(
          taken.map((t) => t.sameHeaders),
        )
          .toFixed(0)
          .padStart(9)} ${median(taken.map((t) => t.served / t.sameHeaders))
          .toFixed(3)
          .padStart(6)}  (${bytes})  ${ratios.map((r) => r.toFixed(2)).join(' ')}`,
      );
    }
    out(
      "  (bare: the body alone, the goal's baseline; +headers: the body with the headers the service sent beside it)",
    );
    // The same rounds' cost in the server alone: the load generator shares the machine, and how the
    // scheduler places it moves req/s (and its ratio) far more than the server's CPU a request.
    out(`server CPU a request (µs, median of ${ROUNDS} rounds)  service    bare  bare/service`);
    for (const label of Object.keys(targets)) {
      const taken = samples.get(label)!;
      const servedCpu = median(taken.map((t) => t.servedCpu));
      const bareCpu = median(taken.map((t) => t.bareCpu));
      out(
        `  ${label.padEnd(43)} ${servedCpu.toFixed(1).padStart(7)} ${bareCpu.toFixed(1).padStart(7)} ${(bareCpu / servedCpu).toFixed(3).padStart(8)}`,
      );
    }
    const lastLabel = Object.keys(targets)[1]!;
    out(`board last page vs page 1: ${(rps['board page 1']! / rps[lastLabel]!).toFixed(2)}x the time per request`);

    // Before the MCP load: what the REST reads alone leave resident (the MCP SDK's allocations come on top).
    const afterRest = memoryOf(app.pid);
    out(
      `server RSS after the REST load ${afterRest.rss.toFixed(0)} MB: ${afterRest.anon.toFixed(0)} MB its own; ${anonymousMemoryOf(app.pid)}`,
    );

    // MCP against its REST twin, in rounds the same way.
    const rpcHeaders = {
      ...headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const rpc = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_project', arguments: { handle: projectId } },
    });
    // Warm-up, not counted, as every read above had: the first round's MCP load otherwise pays for
    // compiling the MCP path, which no earlier load ran (its REST twin was warmed with the reads).
    await autocannon({
      url: `http://127.0.0.1:${app.port}/mcp`,
      connections: CONNECTIONS,
      duration: 1,
      method: 'POST',
      headers: rpcHeaders,
      body: rpc,
    });
    const pairs: { mcp: number; rest: number; mcpCpu: number; restCpu: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const viaMcp = () => loadOn(app, '/mcp', { method: 'POST', headers: rpcHeaders, body: rpc });
      const viaRest = () => loadOn(app, targets['one project']!, { headers });
      let mcp: Awaited<ReturnType<typeof loadOn>>;
      let rest: Awaited<ReturnType<typeof loadOn>>;
      if (round % 2 === 0) {
        mcp = await viaMcp();
        rest = await viaRest();
      } else {
        rest = await viaRest();
        mcp = await viaMcp();
      }
      pairs.push({
        mcp: mcp.result.requests.average,
        rest: rest.result.requests.average,
        mcpCpu: mcp.cpuUs,
        restCpu: rest.cpuUs,
      });
    }
    const mcpRps = median(pairs.map((p) => p.mcp));
    const mcpRatios = pairs.map((p) => p.mcp / p.rest);
    out(
      `MCP get_project ${mcpRps.toFixed(0)} req/s; its REST twin ${median(pairs.map((p) => p.rest)).toFixed(0)} req/s; ratio ${median(mcpRatios).toFixed(3)} (median of ${ROUNDS} rounds: ${mcpRatios.map((r) => r.toFixed(2)).join(' ')})`,
    );
    const mcpCpu = median(pairs.map((p) => p.mcpCpu));
    const restCpu = median(pairs.map((p) => p.restCpu));
    out(
      `  (server CPU a request: MCP ${mcpCpu.toFixed(1)} µs, its REST twin ${restCpu.toFixed(1)} µs; REST/MCP ${(restCpu / mcpCpu).toFixed(3)})`,
    );
    out(`  (${stolenSince(loadsStarted)})`);

    const memory = memoryOf(app.pid);
    out(
      `server RSS after the load (REST and MCP) ${memory.rss.toFixed(0)} MB (peak ${memory.peak.toFixed(0)} MB): ${memory.anon.toFixed(0)} MB its own, ${memory.file.toFixed(0)} MB mapped files`,
    );
    out(`  server own memory (MB): ${anonymousMemoryOf(app.pid)}`);
    out(`  server memory (MB): ${await app.memory()}`);
    return {
      projects: spec.projects,
      mirrorSeconds: walk.seconds,
      selectSeconds: select.seconds,
      depth10Ms,
      depth90Ms,
      frontPageMs,
      middlePageMs,
      rps: { ...rps, 'board last page': rps[lastLabel]! },
      bareRps: { ...bareRps, 'board last page': bareRps[lastLabel]! },
      mcpRps,
      rss: memory.anon,
    };
  } finally {
    await app.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** How each cost grows with the board: each size's figure divided by the smallest size's. */
function growthTable(results: readonly SizeResult[]): void {
  const base = results[0]!;
  out(
    `\ngrowth with the board (cost relative to ${base.projects} projects; 1.00 = flat, ${results.map((r) => `${r.projects / base.projects}x`).join(' / ')} the projects):`,
  );
  const header = `${'cost'.padEnd(30)} ${results.map((r) => String(r.projects).padStart(9)).join(' ')}`;
  out(header);
  const growth = (cost: (r: SizeResult) => number) =>
    results.map((r) => (cost(r) / cost(base)).toFixed(2).padStart(9)).join(' ');
  const row = (label: string, cost: (r: SizeResult) => number, note = '') =>
    out(`${label.padEnd(30)} ${growth(cost)}${note}`);
  row('mirror, per project', (r) => r.mirrorSeconds / r.projects);
  row('delta page at 90 % depth', (r) => r.depth90Ms);
  row('board page 2-41, first read', (r) => r.frontPageMs);
  row('board middle page, first read', (r) => r.middlePageMs);
  for (const label of [
    'board page 1',
    'board last page',
    'delta page (limit 100, mid depth)',
    'one project',
    'call page (limit 30)',
    'search q=0x…',
  ]) {
    // A page's bytes differ between data sets: its time against bare Fastify sending the same bytes is the board's own cost.
    const againstBare = growth((r) => r.bareRps[label]! / r.rps[label]!);
    row(
      `${label.replace(' (limit 100, mid depth)', '')}, per request`,
      (r) => 1 / r.rps[label]!,
      `  (against bare:${againstBare})`,
    );
  }
  row('MCP get_project, per request', (r) => 1 / r.mcpRps);
  row('server RSS (own memory)', (r) => r.rss);
}

export async function main(): Promise<void> {
  const scale = process.argv.includes('--scale');
  // `--only N`: one size (e.g. `--only 1000000` for the 1M memory figures without the smaller runs).
  const only = process.argv.indexOf('--only');
  const onlySize = only >= 0 ? Number(process.argv[only + 1]) : NaN;
  if (only >= 0 && !(Number.isInteger(onlySize) && onlySize > 0))
    throw new Error('--only takes a number of projects, e.g. --only 1000000');
  const sizes =
    only >= 0
      ? [onlySize]
      : process.argv.includes('--quick')
        ? [10_000]
        : scale
          ? [10_000, 100_000, 1_000_000]
          : [10_000, 100_000];
  const results: SizeResult[] = [];
  try {
    for (const projects of sizes) results.push(await benchSize(dataSetSpec(projects, projects >= 1_000_000)));
  } finally {
    keepAlive.destroy();
  }
  if (results.length > 1) growthTable(results);
}

if (import.meta.main) await main();
