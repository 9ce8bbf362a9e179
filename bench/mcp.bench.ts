/**
 * MCP on the official SDK over real HTTP (autocannon, in a process of its own): `tools/call
 * get_project` against its REST twin `GET /v1/projects/{id}` in alternating rounds, in both protocol
 * eras (2025-11-25 through the stateless handshake, answered as one SSE event; 2026-07-28 with the
 * per-request envelope, answered as JSON), at two data set sizes, as ratios measured in the same run
 * (as figures, no longer a goal). Then what an agent pays in context: tools/list bytes (goal: at most
 * 26 KB) and the tokens of what a model is shown of it (goal: at most 4,000), and every tool's text at
 * its defaults on the largest documents of the data set, in tokens (bytes / 4; goal: at most 5,000),
 * with the full view of list_projects and sync_projects beside.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../api/app.ts';
import { changeOwner, issueKey } from '../service/access.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { createServices } from '../service/services.ts';
import { openStores } from '../service/stores.ts';
import { benchConfig, dataSetSpec, ensureDataSet } from './dataset.ts';
import { countInstructions } from './instructions.ts';
import { median } from './median.ts';
import { cpuTimes, stolenSince } from './steal.ts';

const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
/** REST and MCP are measured in alternating rounds, so load from elsewhere on the machine hits both alike. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = 10;
const SIZES = (process.env.BENCH_MCP_SIZES ?? '10000,100000').split(',').map(Number);

type Target = { label: string; method?: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: string };
type AutocannonResult = {
  requests: { average: number; total: number };
  non2xx: number;
  errors: number;
  timeouts: number;
};

const AUTOCANNON = fileURLToPath(import.meta.resolve('autocannon'));

/** One autocannon run in a child process (its `-j` JSON report), so its CPU is not the server's. */
function autocannon(url: string, target: Target, duration: number): Promise<AutocannonResult> {
  const args = [AUTOCANNON, '-j', '-c', String(CONNECTIONS), '-d', String(duration), '-m', target.method ?? 'GET'];
  for (const [name, value] of Object.entries(target.headers ?? {})) args.push('-H', `${name}=${value}`);
  if (target.body) args.push('-b', target.body);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as AutocannonResult)
        : reject(new Error(`autocannon exited ${code}: ${err}`)),
    );
  });
}

const ownCpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** Requests per second and this process's (the server's) CPU time per request. */
async function measure(base: string, target: Target): Promise<{ perSecond: number; cpuMicros: number }> {
  await autocannon(`${base}${target.path}`, target, 1); // warm-up
  const before = ownCpuMicros();
  const result = await autocannon(`${base}${target.path}`, target, DURATION_SECONDS);
  const cpu = ownCpuMicros() - before;
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) throw new Error(`${target.label}: ${failed} of ${result.requests.total} requests failed`);
  return { perSecond: result.requests.average, cpuMicros: cpu / result.requests.total };
}

/** The 2026-07-28 envelope a modern client puts in every request's `_meta`. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** The JSON-RPC message of a /mcp response (JSON, or the data line of a one-event SSE stream). */
function messageOf(text: string, contentType: string | null): any {
  if (!contentType?.startsWith('text/event-stream')) return JSON.parse(text);
  const line = text.split('\n').find((l) => l.startsWith('data: '));
  if (line === undefined) throw new Error('no message in the stream');
  return JSON.parse(line.slice('data: '.length));
}

const tokens = (bytes: number): number => Math.round(bytes / 4);

async function benchSize(projects: number): Promise<void> {
  const cached = await ensureDataSet(dataSetSpec(projects));
  // A copy: issuing the bench's key writes to the store.
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-mcp-'));
  cpSync(cached, dir, { recursive: true });
  const config = { ...benchConfig(dir), PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: 1_000_000_000 };
  const stores = await openStores(config);
  const limiter = await createRateLimiter(config);
  const services = createServices({ config, stores, limiter });
  const app = buildApp(services);
  try {
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const { key } = await issueKey(stores, 'bench');
    // researcher_answers is open to allowlisted owners only.
    await changeOwner(stores, 'bench', 'allow');
    const auth = { authorization: `Bearer ${key}` };
    const legacyHeaders = {
      ...auth,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    };
    const modernHeaders = (method: string, name?: string) => ({
      ...auth,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
    });
    const call = (name: string, args: Record<string, unknown>, modern = false) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, arguments: args, ...(modern ? { _meta: MODERN_META } : {}) },
      });
    const rpc = async (body: string, headers: Record<string, string>) => {
      const res = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'accept-encoding': 'identity' },
        body,
      });
      return messageOf(await res.text(), res.headers.get('content-type'));
    };

    const first = (await (await fetch(`${base}/v1/projects?page=1`, { headers: auth })).json()) as {
      projects: { id: string }[];
    };
    const id = first.projects[0]!.id;
    // The bodies must be the same before their rates are compared.
    const restBody = await (
      await fetch(`${base}/v1/projects/${id}`, { headers: { ...auth, 'accept-encoding': 'identity' } })
    ).text();
    for (const modern of [false, true]) {
      const answer = await rpc(
        call('get_project', { handle: id }, modern),
        modern ? modernHeaders('tools/call', 'get_project') : legacyHeaders,
      );
      if (answer.result?.content?.[0]?.text !== restBody)
        throw new Error(
          `get_project (${modern ? '2026-07-28' : '2025-11-25'}) and its REST twin answered different bodies`,
        );
    }

    const rest: Target = { label: 'REST GET /v1/projects/{id}', path: `/v1/projects/${id}`, headers: auth };
    const legacy: Target = {
      label: 'MCP 2025-11-25 get_project',
      method: 'POST',
      path: '/mcp',
      headers: legacyHeaders,
      body: call('get_project', { handle: id }),
    };
    const modern: Target = {
      label: 'MCP 2026-07-28 get_project',
      method: 'POST',
      path: '/mcp',
      headers: modernHeaders('tools/call', 'get_project'),
      body: call('get_project', { handle: id }, true),
    };
    process.stdout.write(
      `\n${projects} projects: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per measurement after a 1 s warm-up, ${ROUNDS} rounds\n`,
    );
    const loadsStarted = cpuTimes();
    const rounds: {
      rest: number;
      legacy: number;
      modern: number;
      restCpu: number;
      legacyCpu: number;
      modernCpu: number;
    }[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await measure(base, rest);
      const l = await measure(base, legacy);
      const m = await measure(base, modern);
      rounds.push({
        rest: r.perSecond,
        legacy: l.perSecond,
        modern: m.perSecond,
        restCpu: r.cpuMicros,
        legacyCpu: l.cpuMicros,
        modernCpu: m.cpuMicros,
      });
      process.stdout.write(
        `  round ${round}: REST ${r.perSecond.toFixed(0)} req/s (${r.cpuMicros.toFixed(0)} µs CPU/req), ` +
          `MCP 2025 ${l.perSecond.toFixed(0)} (${l.cpuMicros.toFixed(0)} µs), MCP 2026 ${m.perSecond.toFixed(0)} (${m.cpuMicros.toFixed(0)} µs); ` +
          `ratios ${(l.perSecond / r.perSecond).toFixed(3)} / ${(m.perSecond / r.perSecond).toFixed(3)}\n`,
      );
    }
    const ratio = (pick: (r: (typeof rounds)[number]) => number) => median(rounds.map(pick)).toFixed(3);
    process.stdout.write(
      `  get_project / REST twin, req/s, median: 2025-11-25 ${ratio((r) => r.legacy / r.rest)}, 2026-07-28 ${ratio((r) => r.modern / r.rest)}\n`,
    );
    process.stdout.write(
      `  REST CPU/req / MCP CPU/req, median: 2025-11-25 ${ratio((r) => r.restCpu / r.legacyCpu)}, 2026-07-28 ${ratio((r) => r.restCpu / r.modernCpu)}\n`,
    );
    process.stdout.write(`  (${stolenSince(loadsStarted)}, over the rounds)\n`);
    // A single agent: one call after another on one connection, its median latency (goal: at most 1 ms on a quiet machine).
    for (const target of [legacy, modern]) {
      const times: number[] = [];
      for (let i = 0; i < 550; i++) {
        const started = performance.now();
        const res = await fetch(`${base}/mcp`, { method: 'POST', headers: target.headers, body: target.body! });
        await res.arrayBuffer();
        if (i >= 50) times.push(performance.now() - started);
      }
      process.stdout.write(`  ${target.label}, one agent, p50: ${median(times).toFixed(3)} ms (goal <= 1 ms)\n`);
    }

    // What an agent pays in context.
    const list = await rpc(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), legacyHeaders);
    const shown = (list.result.tools as { name: string; description: string; inputSchema: unknown }[]).map(
      ({ name, description, inputSchema }) => ({ name, description, inputSchema }),
    );
    process.stdout.write(
      `  tools/list: ${Buffer.byteLength(JSON.stringify(list))} bytes (goal <= 26 KB); names, descriptions and input schemas ${tokens(Buffer.byteLength(JSON.stringify(shown)))} tokens (goal <= 4,000)\n`,
    );
    const textOf = async (name: string, args: Record<string, unknown>): Promise<{ bytes: number; result: any }> => {
      const answer = await rpc(call(name, args), legacyHeaders);
      if (answer.result === undefined || answer.result.isError)
        throw new Error(`${name} ${JSON.stringify(args)}: ${JSON.stringify(answer).slice(0, 300)}`);
      return { bytes: Buffer.byteLength(answer.result.content[0].text), result: answer.result.structuredContent };
    };
    const largest = new Map<string, number>();
    const keep = (label: string, bytes: number) => largest.set(label, Math.max(largest.get(label) ?? 0, bytes));
    // Every default page of the archive (board and delta), full and summary, and the largest single project.
    let biggestProject = { id, bytes: 0 };
    for (let cursor: string | undefined, more = true; more;) {
      const summary = await textOf('sync_projects', cursor === undefined ? {} : { cursor });
      keep('sync_projects {}', summary.bytes);
      const page = await textOf('sync_projects', cursor === undefined ? { view: 'full' } : { cursor, view: 'full' });
      keep('sync_projects {view: full}', page.bytes);
      for (const project of page.result.projects as { id: string }[]) {
        const size = Buffer.byteLength(JSON.stringify(project));
        if (size > biggestProject.bytes) biggestProject = { id: project.id, bytes: size };
      }
      cursor = page.result.cursor as string;
      more = page.result.hasMore as boolean;
    }
    const pages = Math.min(20, Math.ceil(projects / 50));
    for (let page = 1; page <= pages; page++) {
      keep('list_projects {}', (await textOf('list_projects', { page })).bytes);
      keep('list_projects {view: full}', (await textOf('list_projects', { page, view: 'full' })).bytes);
    }
    keep('diff_projects {from: start}', (await textOf('diff_projects', { from: '2000-01-01T00:00:00Z' })).bytes);
    keep(
      'get_project (largest)',
      (await textOf('get_project', { handle: biggestProject.id, include: 'context' })).bytes,
    );
    keep('search_projects (largest)', (await textOf('search_projects', { q: biggestProject.id })).bytes);
    keep('researcher_answers (largest)', (await textOf('researcher_answers', { handle: biggestProject.id })).bytes);
    keep('get_pulse {}', (await textOf('get_pulse', {})).bytes);
    let biggestCall = { id: '', bytes: 0 };
    for (let next: string | null | undefined; next !== null;) {
      const page = await textOf('list_calltracker_calls', next === undefined ? {} : { cursor: next });
      keep('list_calltracker_calls {}', page.bytes);
      for (const c of page.result.calls as { id: string }[]) {
        const size = Buffer.byteLength(JSON.stringify(c));
        if (size > biggestCall.bytes) biggestCall = { id: c.id, bytes: size };
      }
      next = page.result.next as string | null;
    }
    if (biggestCall.id !== '')
      keep('get_calltracker_call (largest)', (await textOf('get_calltracker_call', { id: biggestCall.id })).bytes);
    process.stdout.write(
      '  tool text at defaults, the largest over the data set (tokens = bytes / 4; goal <= 5,000 but {view: full}):\n',
    );
    for (const [label, bytes] of largest)
      process.stdout.write(
        `    ${label.padEnd(34)} ${String(bytes).padStart(8)} bytes  ${String(tokens(bytes)).padStart(6)} tokens\n`,
      );
    for (const tool of ['list_projects', 'sync_projects']) {
      const full = largest.get(`${tool} {view: full}`)!;
      const summary = largest.get(`${tool} {}`)!;
      process.stdout.write(`  ${tool} summary / full: ${(summary / full).toFixed(3)} of the bytes\n`);
    }
  } finally {
    await app.close();
    await limiter.close();
    await stores.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function main(): Promise<void> {
  process.stdout.write(
    'Measured on a shared machine: the absolute rates move with the other load; the ratios are of the same run.\n',
  );
  for (const projects of SIZES) await benchSize(projects);
  // The cost figure the machine's load does not move (bench/instructions.ts, fewer requests than its default).
  const counts = await countInstructions(Number(process.env.BENCH_INSTRUCTION_REQUESTS ?? 500));
  if (counts === null) process.stdout.write('\ninstructions: skipped, valgrind is not installed\n');
  else
    process.stdout.write(
      `\ninstructions a request (callgrind, 10k projects): REST one project ${counts.rest.toFixed(0)}, ` +
        `MCP get_project 2025-11-25 ${counts.legacy.toFixed(0)}, 2026-07-28 ${counts.modern.toFixed(0)} (goal <= 1,000,000)\n`,
    );
}

if (import.meta.main) await main();
