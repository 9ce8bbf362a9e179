/**
 * MCP throughput over real HTTP (autocannon, in a process of its own, against this process's
 * listening server), printed as ratios to figures measured in the same run: `tools/call get_project`
 * against its REST twin `GET /v1/projects/{id}` (goal: at least 0.7), and everything against GET /healthz.
 * Beside it, the same ratio for bare Fastify (in a process of its own) answering the same two requests
 * with the same response bytes and headers: what the two exchanges allow before the service does
 * anything (an MCP call is a POST whose JSON body is parsed, and its result carries the body twice).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../api/app.ts';
import { parseConfig } from '../config/config.ts';
import { generateLines } from '../ingest/generate/generate.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { issueKey } from '../service/access.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { createServices } from '../service/services.ts';
import { openStores } from '../service/stores.ts';
import type { RecordedBody } from './reads-server.ts';
import { replayable, startServer } from './servers.ts';
import { median } from './median.ts';
import { cpuTimes, stolenSince } from './steal.ts';

const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
/** REST and MCP are measured in alternating rounds, so load from elsewhere on the machine hits both alike. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CONNECTIONS = 10;
const BARE_ROUNDS = Math.min(ROUNDS, 5);

type Target = { label: string; method?: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: string };


type Measured = { perSecond: number; cpuMicrosPerRequest: number };

type AutocannonResult = {
  requests: { average: number; total: number };
  latency: { p99: number };
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
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as AutocannonResult) : reject(new Error(`autocannon exited ${code}: ${err}`))));
  });
}

/** CPU time of this process so far, in microseconds. */
const ownCpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** CPU time of another process so far, in microseconds (Linux /proc; utime and stime in clock ticks of 1/100 s). */
const cpuMicrosOf = (pid: number) => (): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};

/**
 * Requests per second, and the server's CPU time per request (this process's unless `cpu` reads
 * another's), which moves far less with other load on a shared machine than requests per second do.
 */
async function measure(base: string, target: Target, quiet = false, cpu: () => number = ownCpuMicros): Promise<Measured> {
  const run = (duration: number) => autocannon(`${base}${target.path}`, target, duration);
  await run(1); // warm-up: JIT, caches, connections
  const cpuBefore = cpu();
  const result = await run(DURATION_SECONDS);
  const cpuMicros = cpu() - cpuBefore;
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) throw new Error(`${target.label}: ${failed} of ${result.requests.total} requests failed`);
  const perSecond = result.requests.average;
  const cpuMicrosPerRequest = cpuMicros / result.requests.total;
  if (!quiet) {
    process.stdout.write(
      `${target.label.padEnd(40)} ${perSecond.toFixed(0).padStart(8)} req/s  p99 ${String(result.latency.p99).padStart(4)} ms  ${cpuMicrosPerRequest.toFixed(0).padStart(5)} µs server CPU/req\n`,
    );
  }
  return { perSecond, cpuMicrosPerRequest };
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-mcp-'));
  try {
    const parsed = parseConfig({
      PULSEBOARD_DATA_DIR: dir,
      PULSEBOARD_RATE_LIMIT: '100000000',
      PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: '100000000',
      PULSEBOARD_LOG_LEVEL: 'silent',
    });
    if (!parsed.ok) throw new Error(parsed.reason);
    const config = parsed.config;
    const stores = await openStores(config);
    const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
    const options = { projects: 500, seed: 5, calls: 100, days: 30, hotContractCalls: 0, followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER };
    for (const line of generateLines(options)) await ingestor.ingest(line, 'ndjson');
    await stores.catchUp();

    const limiter = createRateLimiter(config);
    const services = createServices({ config, stores, limiter });
    const app = buildApp(services);
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const { key } = await issueKey(stores, 'bench');
    const auth = { authorization: `Bearer ${key}` };
    const mcpHeaders = { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
    const rpc = (method: string, params?: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) });
    const id = 'prj-s5-000042';

    // The two bodies must be the same before their rates are compared. Read uncompressed, as autocannon reads them.
    const plain = { 'accept-encoding': 'identity' };
    const restResponse = await fetch(`${base}/v1/projects/${id}`, { headers: { ...auth, ...plain } });
    const restBody = await restResponse.text();
    const mcpCall = rpc('tools/call', { name: 'get_project', arguments: { handle: id } });
    const mcpResponse = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...mcpHeaders, ...plain }, body: mcpCall });
    const mcpText = await mcpResponse.text();
    const mcpAnswer = JSON.parse(mcpText) as { result: { content: { text: string }[] } };
    if (mcpAnswer.result.content[0]!.text !== restBody) throw new Error('get_project and GET /v1/projects/{id} answered different bodies');
    const recorded: RecordedBody[] = [
      { method: 'GET', url: `/v1/projects/${id}`, contentType: restResponse.headers.get('content-type')!, body: restBody, headers: replayable(restResponse.headers) },
      { method: 'POST', url: '/mcp', contentType: mcpResponse.headers.get('content-type')!, body: mcpText, headers: replayable(mcpResponse.headers) },
    ];
    const bodiesFile = join(dir, 'bodies.json');
    writeFileSync(bodiesFile, JSON.stringify(recorded));

    process.stdout.write(`over HTTP: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per measurement after a 1 s warm-up\n`);
    const baseline = (await measure(base, { label: 'baseline: GET /healthz', path: '/healthz' })).perSecond;
    const restTarget: Target = { label: 'REST GET /v1/projects/{id}', path: `/v1/projects/${id}`, headers: auth };
    const mcpTarget: Target = {
      label: 'MCP tools/call get_project',
      method: 'POST',
      path: '/mcp',
      headers: mcpHeaders,
      body: rpc('tools/call', { name: 'get_project', arguments: { handle: id } }),
    };
    const pairs: { rest: Measured; mcp: Measured }[] = [];
    const loadsStarted = cpuTimes();
    for (let round = 1; round <= ROUNDS; round++) {
      const pair = { rest: await measure(base, restTarget, true), mcp: await measure(base, mcpTarget, true) };
      pairs.push(pair);
      process.stdout.write(
        `round ${round}: REST ${pair.rest.perSecond.toFixed(0)} req/s ${pair.rest.cpuMicrosPerRequest.toFixed(0)} µs server CPU/req, ` +
          `MCP get_project ${pair.mcp.perSecond.toFixed(0)} req/s ${pair.mcp.cpuMicrosPerRequest.toFixed(0)} µs server CPU/req, ratio ${(pair.mcp.perSecond / pair.rest.perSecond).toFixed(3)}\n`,
      );
    }
    const bare = await startServer(['bare', bodiesFile]);
    const bareBase = `http://127.0.0.1:${bare.port}`;
    const barePairs: { rest: Measured; mcp: Measured }[] = [];
    try {
      for (let round = 1; round <= BARE_ROUNDS; round++) {
        const pair = { rest: await measure(bareBase, restTarget, true, cpuMicrosOf(bare.pid)), mcp: await measure(bareBase, mcpTarget, true, cpuMicrosOf(bare.pid)) };
        barePairs.push(pair);
        process.stdout.write(
          `bare Fastify, same requests and response bytes, round ${round}: REST ${pair.rest.perSecond.toFixed(0)} req/s ${pair.rest.cpuMicrosPerRequest.toFixed(0)} µs CPU/req, ` +
            `MCP ${pair.mcp.perSecond.toFixed(0)} req/s ${pair.mcp.cpuMicrosPerRequest.toFixed(0)} µs CPU/req, ratio ${(pair.mcp.perSecond / pair.rest.perSecond).toFixed(3)}\n`,
        );
      }
    } finally {
      await bare.stop();
    }
    const rest = median(pairs.map((p) => p.rest.perSecond));
    const mcpGet = median(pairs.map((p) => p.mcp.perSecond));
    const mcpList = (await measure(base, { label: 'MCP tools/list', method: 'POST', path: '/mcp', headers: mcpHeaders, body: rpc('tools/list') })).perSecond;
    const mcpPing = (await measure(base, { label: 'MCP ping', method: 'POST', path: '/mcp', headers: mcpHeaders, body: rpc('ping') })).perSecond;

    process.stdout.write('\nratios:\n');
    process.stdout.write(
      `  MCP get_project / REST GET /v1/projects/{id}   ${median(pairs.map((p) => p.mcp.perSecond / p.rest.perSecond)).toFixed(3)}  req/s, median of ${ROUNDS} rounds (goal >= 0.7)\n`,
    );
    process.stdout.write(
      `  REST server CPU/req / MCP get_project server CPU/req ${median(pairs.map((p) => p.rest.cpuMicrosPerRequest / p.mcp.cpuMicrosPerRequest)).toFixed(3)}  (the req/s ratio a CPU-bound process reaches)\n`,
    );
    process.stdout.write(`  (${stolenSince(loadsStarted)}, over the service's and bare Fastify's rounds)\n`);
    const bareRatio = median(barePairs.map((p) => p.mcp.perSecond / p.rest.perSecond));
    process.stdout.write(`  bare Fastify: the same MCP exchange / the same REST exchange ${bareRatio.toFixed(3)}  req/s, median of ${BARE_ROUNDS} rounds (the most the two exchanges allow)\n`);
    process.stdout.write(
      `  bare Fastify: REST CPU/req / MCP CPU/req ${median(barePairs.map((p) => p.rest.cpuMicrosPerRequest / p.mcp.cpuMicrosPerRequest)).toFixed(3)}\n`,
    );
    for (const [label, value] of Object.entries({ 'REST project read': rest, 'MCP get_project': mcpGet, 'MCP tools/list': mcpList, 'MCP ping': mcpPing })) {
      process.stdout.write(`  ${label.padEnd(18)} / GET /healthz           ${(value / baseline).toFixed(3)}\n`);
    }
    await app.close();
    await limiter.close();
    await stores.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
