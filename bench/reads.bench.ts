/**
 * The read path over real HTTP on 127.0.0.1 at 10k and 100k projects (`--scale` adds 1M, `--only N`),
 * each figure beside its baseline of the same run: the delta mirror (raw-http.ts, envelopes decoded)
 * against one SELECT of the same rows and against bare Fastify sending the same pages; a page at 90 %
 * depth against one at 10 %; board pages read once, middle against front; each read under load in
 * ROUNDS rounds against bare Fastify sending the same bytes (the median ratio); the server's memory,
 * and how each cost grows with the board.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS } from '../projectors/projects.ts';
import { generationPath, readPointer } from '../readmodels/sqlite/generations.ts';
import { benchKey, benchSizes, dataSetSpec, ensureDataSet, type DataSetSpec } from './dataset.ts';
import { median } from './median.ts';
import { connectRawHttp } from './raw-http.ts';
import {
  cpuTimes,
  loadOn,
  startBare,
  ROUNDS,
  startServer,
  stolenSince,
  type RecordedBody,
  type Server,
} from './servers.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
const out = (line = '') => process.stdout.write(`${line}\n`);
const ms = (ns: bigint) => Number(ns) / 1e6;

/** Resident memory of a process in MB (Linux /proc): all of it, its peak, its own (anonymous) and mapped files. */
function memoryOf(pid: number): { rss: number; peak: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024, anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
}

type SizeResult = Awaited<ReturnType<typeof benchSize>>;

/** The envelope members after a delta page's `projects` array: read from the last bytes of the page. */
const ENVELOPE_TAIL_BYTES = 1024;
const CURSOR_MEMBER = /"cursor":"([A-Za-z0-9_-]+)","hasMore":(true|false),"limit":(\d+),"readAt":"[^"]*"\}$/;

/**
 * Mirrors the board by delta paging over one raw keep-alive socket, as the delta-sync consumer does,
 * decoding only each page's envelope (a page with hasMore holds exactly `limit` rows; the last page is
 * parsed to count its rows). `record`: each page's URL and body, for a bare server to send again.
 */
async function mirror(
  port: number,
  headers: Record<string, string>,
  filter = '',
  record?: { url: string; bytes: Buffer }[],
): Promise<{ seconds: number; pages: number[]; bytes: number[]; rows: number; cursors: string[] }> {
  const pages: number[] = [];
  const sizes: number[] = [];
  const cursors: string[] = [];
  let rows = 0;
  let path = `/v1/projects?since=1970-01-01T00:00:00Z&limit=100${filter}`;
  const raw = await connectRawHttp(port);
  const started = process.hrtime.bigint();
  try {
    for (;;) {
      const t = process.hrtime.bigint();
      const { status, body } = await raw.get(path, { ...headers, 'accept-encoding': 'identity' });
      if (status !== 200) throw new Error(`mirror page ${pages.length + 1}: ${status}`);
      const envelope = CURSOR_MEMBER.exec(body.toString('utf8', Math.max(0, body.length - ENVELOPE_TAIL_BYTES)));
      if (!envelope) throw new Error(`mirror page ${pages.length + 1}: no delta envelope at the end of the page`);
      const [, cursor, more, limit] = envelope as unknown as [string, string, string, string];
      rows +=
        more === 'true'
          ? Number(limit)
          : (JSON.parse(body.toString('utf8')) as { projects: unknown[] }).projects.length;
      sizes.push(body.length);
      // The raw client's body is a view of a buffer it reuses: a copy is kept.
      record?.push({ url: path, bytes: Buffer.from(body) });
      pages.push(ms(process.hrtime.bigint() - t));
      cursors.push(cursor);
      if (more !== 'true') break;
      path = `/v1/projects?cursor=${cursor}&limit=100${filter}`;
    }
  } finally {
    raw.close();
  }
  return { seconds: ms(process.hrtime.bigint() - started) / 1000, pages, bytes: sizes, rows, cursors };
}

/** The baseline of the mirror: one SELECT of the same documents, in (seq, id) order, read to the end. */
function selectAll(dir: string): { seconds: number; rows: number } {
  const pointer = readPointer(dir);
  const db = new DatabaseSync(generationPath(dir, pointer.ok ? pointer.generation : 0), { readOnly: true });
  try {
    const started = process.hrtime.bigint();
    let rows = 0;
    const facets = PUBLIC_PROJECT_FACETS.map(() => '?').join(',');
    const statement = db.prepare(`SELECT doc FROM docs WHERE collection = ? AND facet IN (${facets}) ORDER BY seq, id`);
    for (const row of statement.iterate(PROJECTS_COLLECTION, ...PUBLIC_PROJECT_FACETS)) if (row) rows += 1;
    return { seconds: ms(process.hrtime.bigint() - started) / 1000, rows };
  } finally {
    db.close();
  }
}

/** Median of the values around a depth (a fraction of the walk), 5 % of the pages wide (at least 5). */
function pagesAround(pages: readonly number[], depth: number): number {
  const width = Math.max(5, Math.round(pages.length * 0.05));
  const from = Math.max(0, Math.min(Math.round(pages.length * depth) - (width >> 1), pages.length - width));
  return median(pages.slice(from, from + width));
}

/** Board pages by number, each read once: every read is a page's first, as after a commit. Median ms. */
async function boardPagesOnce(port: number, headers: Record<string, string>, pages: readonly number[]) {
  const raw = await connectRawHttp(port);
  const times: number[] = [];
  for (const page of pages) {
    const t = process.hrtime.bigint();
    const { status } = await raw.get(`/v1/projects?page=${page}`, { ...headers, 'accept-encoding': 'identity' });
    if (status !== 200) throw new Error(`board page ${page}: ${status}`);
    times.push(ms(process.hrtime.bigint() - t));
  }
  raw.close();
  return median(times);
}

async function benchSize(spec: DataSetSpec) {
  out(`\n-- ${spec.projects} projects (${spec.calls} calls, ${spec.days} days)`);
  const dir = await ensureDataSet(spec);
  const headers = { authorization: `Bearer ${await benchKey(dir)}` };
  const app = await startServer(['app', dir]);
  const work = mkdtempSync(join(tmpdir(), 'pulseboard-reads-bench-'));
  try {
    // Warm the page cache as the SELECT will find it, and the server with walks of every project
    // through other cursors: the measured walk meets a server in its steady state and still reads
    // each of its pages for the first time, as one mirror does (a body cache keeps a page from its
    // second read on).
    selectAll(dir);
    await mirror(app.port, headers, '&has_dossier=true');
    await mirror(app.port, headers, '&has_dossier=false');
    const walk = await mirror(app.port, headers);
    // The pages for the bare server come from a walk of their own, so no measured walk holds them.
    const served: { url: string; bytes: Buffer }[] = [];
    await mirror(app.port, headers, '', served);
    const select = selectAll(dir);
    if (walk.rows !== select.rows)
      throw new Error(`the mirror served ${walk.rows} projects, the SELECT ${select.rows}`);
    const barePages = await startBare(
      join(work, 'pages.ndjson'),
      (function* () {
        for (const { url, bytes } of served.splice(0))
          yield { url, contentType: JSON_TYPE, body: bytes.toString('utf8') };
      })(),
    );
    let bareWalk: Awaited<ReturnType<typeof mirror>>;
    try {
      await mirror(barePages.port, {});
      bareWalk = await mirror(barePages.port, {});
    } finally {
      await barePages.stop();
    }
    const depth10Ms = pagesAround(walk.pages, 0.1);
    const depth90Ms = pagesAround(walk.pages, 0.9);
    // Later pages hold later-written projects, which carry more: per byte served is the depth's own cost.
    const perByte = walk.pages.map((t, i) => t / walk.bytes[i]!);
    const kib = (depth: number) => (pagesAround(walk.bytes, depth) / 1024).toFixed(0);
    out(
      `mirror: ${walk.rows} projects in ${walk.pages.length} pages, ${walk.seconds.toFixed(2)} s; one SELECT of the same rows ${select.seconds.toFixed(3)} s; ratio ${(select.seconds / walk.seconds).toFixed(3)}`,
    );
    out(
      `  (the same pages from bare Fastify to the same client: ${bareWalk.seconds.toFixed(2)} s; ratio ${(select.seconds / bareWalk.seconds).toFixed(3)})`,
    );
    out(
      `median page at 10 % depth ${depth10Ms.toFixed(2)} ms (${kib(0.1)} KiB), at 90 % ${depth90Ms.toFixed(2)} ms (${kib(0.9)} KiB); ` +
        `90 %/10 % ${(depth90Ms / depth10Ms).toFixed(2)}x, per byte served ${(pagesAround(perByte, 0.9) / pagesAround(perByte, 0.1)).toFixed(2)}x`,
    );

    const get = async <T>(path: string) =>
      (await (await fetch(`http://127.0.0.1:${app.port}${path}`, { headers })).json()) as T;
    const first = await get<{ projects: { id: string }[]; totalPages: number }>('/v1/projects');
    const calls = await get<{ calls: { tokens: { contract: string }[] }[] }>('/v1/calltracker/calls?limit=30');
    const tokens = calls.calls.flatMap((c) => c.tokens);
    const contract = (tokens.find((t) => t.contract.startsWith('0x')) ?? tokens[0]!).contract;

    // Board pages by number, each read once (page 1 and the last page are the load's; these are others).
    const pagesFrom = (from: number) => Array.from({ length: Math.min(40, first.totalPages - 2) }, (_, i) => from + i);
    const middle = pagesFrom(Math.max(2, Math.floor(first.totalPages / 2) - 20));
    const frontPageMs = await boardPagesOnce(app.port, headers, pagesFrom(2));
    const middlePageMs = await boardPagesOnce(app.port, headers, middle);
    out(
      `board pages by number, each read once: pages 2-${pagesFrom(2).at(-1)} median ${frontPageMs.toFixed(2)} ms, ` +
        `pages ${middle[0]}-${middle.at(-1)} of ${first.totalPages} ${middlePageMs.toFixed(2)} ms; middle/front ${(middlePageMs / frontPageMs).toFixed(2)}x`,
    );

    const lastLabel = 'board last page';
    const targets: Record<string, string> = {
      'board page 1': '/v1/projects?page=1',
      [lastLabel]: `/v1/projects?page=${first.totalPages}`,
      'delta page (limit 100, mid depth)': `/v1/projects?cursor=${walk.cursors[walk.cursors.length >> 1]}&limit=100`,
      'one project': `/v1/projects/${encodeURIComponent(first.projects[0]!.id)}`,
      'call page (limit 30)': '/v1/calltracker/calls?limit=30',
      'search q=0x…': `/v1/search?q=${encodeURIComponent(contract)}`,
    };
    // The baseline answers each URL with the bytes the service sent for it (uncompressed, as autocannon asks).
    const recorded: RecordedBody[] = [];
    for (const url of Object.values(targets)) {
      const res = await fetch(`http://127.0.0.1:${app.port}${url}`, {
        headers: { ...headers, 'accept-encoding': 'identity' },
      });
      const contentType = res.headers.get('content-type') ?? 'application/json';
      recorded.push({ url, contentType, body: await res.text() });
    }
    const bare = await startBare(join(work, 'bodies.ndjson'), recorded);

    // Warm-up, not counted: the first load otherwise pays for the JIT and the heap growing to its working size.
    for (const path of Object.values(targets)) await loadOn(app, path, headers, 1);
    await loadOn(bare, targets['board page 1']!, undefined, 1);
    // Rounds, each loading the service and the baseline back to back (the order reversed every other
    // round): a slow spell of this shared machine moves one round, not the figure.
    const samples = new Map(Object.keys(targets).map((label) => [label, [] as { app: Sample; bare: Sample }[]]));
    type Sample = Awaited<ReturnType<typeof loadOn>>;
    const loadsStarted = cpuTimes();
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const [label, path] of Object.entries(targets)) {
          const taken = new Map<Server, Sample>();
          for (const server of round % 2 === 0 ? [app, bare] : [bare, app])
            taken.set(server, await loadOn(server, path, server === app ? headers : undefined));
          samples.get(label)!.push({ app: taken.get(app)!, bare: taken.get(bare)! });
        }
      }
    } finally {
      await bare.stop();
    }
    const rps: Record<string, number> = {};
    const bareRps: Record<string, number> = {};
    out(
      `read (median of ${ROUNDS} rounds)          req/s  p99 ms  bare req/s  ratio  CPU µs  bare µs  (bytes)  ratio in each round`,
    );
    for (const [label, path] of Object.entries(targets)) {
      const taken = samples.get(label)!;
      const of = (pick: (s: { app: Sample; bare: Sample }) => number) => median(taken.map(pick));
      rps[label] = of((s) => s.app.rps);
      bareRps[label] = of((s) => s.bare.rps);
      const ratios = taken.map((s) => s.app.rps / s.bare.rps);
      const cells = [rps[label]!.toFixed(0), of((s) => s.app.p99).toFixed(0), bareRps[label]!.toFixed(0)];
      cells.push(median(ratios).toFixed(3), of((s) => s.app.cpuUs).toFixed(1), of((s) => s.bare.cpuUs).toFixed(1));
      const bytes = recorded.find((r) => r.url === path)!.body.length;
      out(
        `${label.padEnd(34)} ${cells.map((c, i) => c.padStart([7, 7, 11, 6, 7, 8][i]!)).join(' ')}  (${bytes})  ${ratios.map((r) => r.toFixed(2)).join(' ')}`,
      );
    }
    out(`board last page vs page 1: ${(rps['board page 1']! / rps[lastLabel]!).toFixed(2)}x the time per request`);
    out(`  (${stolenSince(loadsStarted)})`);

    const memory = memoryOf(app.pid);
    out(
      `server RSS after the load ${memory.rss.toFixed(0)} MB (peak ${memory.peak.toFixed(0)} MB): ${memory.anon.toFixed(0)} MB its own, ${memory.file.toFixed(0)} MB mapped files`,
    );
    out(`  server memory (MB): ${await app.memory()}`);
    const [mirrorSeconds, rss] = [walk.seconds, memory.anon];
    return { projects: spec.projects, mirrorSeconds, depth90Ms, frontPageMs, middlePageMs, rps, bareRps, rss };
  } finally {
    await app.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** How each cost grows with the board: each size's figure divided by the smallest size's (goal: at most 1.3x). */
function growthTable(results: readonly SizeResult[]): void {
  const base = results[0]!;
  out(`\ngrowth with the board (cost relative to ${base.projects} projects; 1.00 = flat):`);
  out(`${'cost'.padEnd(30)} ${results.map((r) => String(r.projects).padStart(9)).join(' ')}`);
  const growth = (cost: (r: SizeResult) => number) =>
    results.map((r) => (cost(r) / cost(base)).toFixed(2).padStart(9)).join(' ');
  const row = (label: string, cost: (r: SizeResult) => number, note = '') =>
    out(`${label.padEnd(30)} ${growth(cost)}${note}`);
  row('mirror, per project', (r) => r.mirrorSeconds / r.projects);
  row('delta page at 90 % depth', (r) => r.depth90Ms);
  row('board page 2-41, first read', (r) => r.frontPageMs);
  row('board middle page, first read', (r) => r.middlePageMs);
  for (const label of Object.keys(base.rps)) {
    // A page's bytes differ between data sets: its time against bare Fastify sending the same bytes is the board's own cost.
    const note = `  (against bare:${growth((r) => r.bareRps[label]! / r.rps[label]!)})`;
    row(`${label.replace(' (limit 100, mid depth)', '')}, per request`, (r) => 1 / r.rps[label]!, note);
  }
  row('server RSS (own memory)', (r) => r.rss);
}

export async function main(): Promise<void> {
  const sizes = benchSizes(process.argv.includes('--scale') ? [10_000, 100_000, 1_000_000] : [10_000, 100_000]);
  const results: SizeResult[] = [];
  for (const projects of sizes) results.push(await benchSize(dataSetSpec(projects, projects >= 1_000_000)));
  if (results.length > 1) growthTable(results);
}

if (import.meta.main) await main();
