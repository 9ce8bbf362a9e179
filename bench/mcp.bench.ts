/**
 * MCP over real HTTP at 10k and 100k projects (`--only N`): tools/call get_project against its REST
 * twin in ROUNDS rounds, in both protocol eras (both answered as JSON); one
 * agent's p50; then what an agent pays in context: tools/list bytes (goal: at most 26 KB) and tokens
 * (at most 4,000), and every tool's largest text at its defaults (bytes / 4; at most 5,000 tokens).
 * At the first size, the instructions the server runs a call (callgrind, where valgrind is installed: a
 * count the machine's load hardly moves; goal at most 1.0M for get_project, issue 58).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { changeOwner, issueKey } from '../service/access.ts';
import { openStores } from '../service/stores.ts';
import { benchConfig, benchSizes, dataSetSpec, ensureDataSet } from './dataset.ts';
import { median } from './median.ts';
import {
  CONNECTIONS,
  cpuTimes,
  LOAD_SECONDS,
  loadOn,
  ROUNDS,
  startServer,
  stolenSince,
  type LoadTarget,
} from './servers.ts';

const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** The 2026-07-28 envelope a modern client puts in every request's `_meta`. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

const tokens = (bytes: number): number => Math.round(bytes / 4);
type Sample = Awaited<ReturnType<typeof loadOn>>;

/** A copy of the cached data set (issuing the key writes to it), a key whose owner may read researcher_answers. */
async function copyWithKey(projects: number): Promise<{ dir: string; key: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-mcp-'));
  cpSync(await ensureDataSet(dataSetSpec(projects)), dir, { recursive: true });
  const stores = await openStores(benchConfig(dir));
  try {
    const { key } = await issueKey(stores, 'bench');
    await changeOwner(stores, 'bench', 'allow');
    await stores.catchUp();
    return { dir, key };
  } finally {
    await stores.close();
  }
}

/** Requests counted under callgrind, after as many uncounted (about two minutes in all, valgrind is ~50x slower). */
const COUNTED = 1000;

/** Instructions the server runs a request of `target`, in user space. */
async function instructionsOf(dir: string, target: LoadTarget, headers: Record<string, string>): Promise<number> {
  const out = mkdtempSync(join(tmpdir(), 'pulseboard-callgrind-'));
  const callgrind = [
    '--tool=callgrind',
    '--smc-check=all-non-file',
    `--callgrind-out-file=${join(out, 'callgrind.out')}`,
  ];
  const server = await startServer(['app', dir], ['valgrind', ...callgrind]);
  try {
    const counted = { ...(typeof target === 'string' ? { path: target } : target), amount: COUNTED, timeout: 120 };
    await loadOn(server, counted, headers);
    spawnSync('callgrind_control', ['--zero', String(server.pid)]);
    await loadOn(server, counted, headers);
    spawnSync('callgrind_control', ['--dump', String(server.pid)]);
    const dump = readdirSync(out).find((name) => /^callgrind\.out\.\d+$/.test(name));
    const total = dump === undefined ? undefined : /^summary: (\d+)$/m.exec(readFileSync(join(out, dump), 'utf8'))?.[1];
    if (total === undefined) throw new Error('callgrind wrote no dump for the counted requests');
    return Number(total) / COUNTED;
  } finally {
    await server.stop();
    rmSync(out, { recursive: true, force: true });
  }
}

async function benchSize(projects: number, countInstructions: boolean): Promise<void> {
  const { dir, key } = await copyWithKey(projects);
  const server = await startServer(['app', dir]);
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const auth = { authorization: `Bearer ${key}` };
    const mcpHeaders = { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const legacyHeaders = { ...mcpHeaders, 'mcp-protocol-version': '2025-11-25' };
    const modernHeaders = { ...mcpHeaders, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' };
    const call = (name: string, args: Record<string, unknown>, modern = false) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, arguments: args, ...(modern ? { _meta: MODERN_META } : {}) },
      });
    // Both eras answer a call as one JSON-RPC message in JSON.
    const rpc = async (body: string, headers: Record<string, string>): Promise<any> =>
      (
        await fetch(`${base}/mcp`, { method: 'POST', headers: { ...headers, 'accept-encoding': 'identity' }, body })
      ).json();

    const first = (await (await fetch(`${base}/v1/projects?page=1`, { headers: auth })).json()) as {
      projects: { id: string }[];
    };
    const id = first.projects[0]!.id;
    // The bodies must be the same before their rates are compared.
    const restBody = await (
      await fetch(`${base}/v1/projects/${id}`, { headers: { ...auth, 'accept-encoding': 'identity' } })
    ).text();
    const eras = [
      { label: 'MCP 2025-11-25 get_project', headers: legacyHeaders, body: call('get_project', { handle: id }) },
      {
        label: 'MCP 2026-07-28 get_project',
        headers: { ...modernHeaders, 'mcp-name': 'get_project' },
        body: call('get_project', { handle: id }, true),
      },
    ];
    for (const era of eras)
      if ((await rpc(era.body, era.headers)).result?.content?.[0]?.text !== restBody)
        throw new Error(`${era.label} and its REST twin answered different bodies`);

    say(
      `\n${projects} projects: ${CONNECTIONS} connections, ${LOAD_SECONDS} s per measurement after a 1 s warm-up, ${ROUNDS} rounds`,
    );
    const loads = [
      { path: `/v1/projects/${id}`, headers: auth },
      ...eras.map((era) => ({ path: { path: '/mcp', method: 'POST' as const, body: era.body }, headers: era.headers })),
    ];
    const loadsStarted = cpuTimes();
    // Per round: [REST, MCP 2025, MCP 2026], each its req/s and the server's CPU µs a request.
    const rounds: Sample[][] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const taken: Sample[] = [];
      for (const load of loads) {
        await loadOn(server, load.path, load.headers, 1); // warm-up
        taken.push(await loadOn(server, load.path, load.headers));
      }
      rounds.push(taken);
      const [r, l, m] = taken as [Sample, Sample, Sample];
      say(
        `  round ${round}: REST ${r.rps.toFixed(0)} req/s (${r.cpuUs.toFixed(0)} µs CPU/req), ` +
          `MCP 2025 ${l.rps.toFixed(0)} (${l.cpuUs.toFixed(0)} µs), MCP 2026 ${m.rps.toFixed(0)} (${m.cpuUs.toFixed(0)} µs); ` +
          `ratios ${(l.rps / r.rps).toFixed(3)} / ${(m.rps / r.rps).toFixed(3)}`,
      );
    }
    const ratio = (pick: (t: Sample[]) => number) => median(rounds.map(pick)).toFixed(3);
    say(
      `  get_project / REST twin, req/s, median: 2025-11-25 ${ratio((t) => t[1]!.rps / t[0]!.rps)}, 2026-07-28 ${ratio((t) => t[2]!.rps / t[0]!.rps)}`,
    );
    say(
      `  REST CPU/req / MCP CPU/req, median: 2025-11-25 ${ratio((t) => t[0]!.cpuUs / t[1]!.cpuUs)}, 2026-07-28 ${ratio((t) => t[0]!.cpuUs / t[2]!.cpuUs)}`,
    );
    say(`  (${stolenSince(loadsStarted)}, over the rounds)`);
    // A single agent: one call after another on one connection, its median latency (goal: at most 1 ms on a quiet machine).
    for (const era of eras) {
      const times: number[] = [];
      for (let i = 0; i < 550; i++) {
        const started = performance.now();
        await (await fetch(`${base}/mcp`, { method: 'POST', headers: era.headers, body: era.body })).arrayBuffer();
        if (i >= 50) times.push(performance.now() - started);
      }
      say(`  ${era.label}, one agent, p50: ${median(times).toFixed(3)} ms (goal <= 1 ms)`);
    }
    await contextCosts(projects, id, (body) => rpc(body, legacyHeaders), call);
    if (!countInstructions) return;
    if (spawnSync('valgrind', ['--version']).status !== 0)
      return say('  instructions: skipped, valgrind is not installed');
    const counts: string[] = [];
    for (const load of loads) counts.push((await instructionsOf(dir, load.path, load.headers)).toFixed(0));
    say(
      `  instructions a request (callgrind, server process, ${COUNTED} after as many uncounted): REST one project ` +
        `${counts[0]}, MCP get_project 2025-11-25 ${counts[1]}, 2026-07-28 ${counts[2]} (goal <= 1,000,000)`,
    );
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What an agent pays in context: tools/list, and the largest text of every tool at its defaults. */
async function contextCosts(
  projects: number,
  id: string,
  rpc: (body: string) => Promise<any>,
  call: (name: string, args: Record<string, unknown>) => string,
): Promise<void> {
  const list = await rpc(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  const shown = (list.result.tools as { name: string; description: string; inputSchema: unknown }[]).map(
    ({ name, description, inputSchema }) => ({ name, description, inputSchema }),
  );
  say(
    `  tools/list: ${Buffer.byteLength(JSON.stringify(list))} bytes (goal <= 26 KB); names, descriptions and input schemas ${tokens(Buffer.byteLength(JSON.stringify(shown)))} tokens (goal <= 4,000)`,
  );
  const textOf = async (name: string, args: Record<string, unknown>): Promise<{ bytes: number; result: any }> => {
    const answer = await rpc(call(name, args));
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
  keep('get_project (largest)', (await textOf('get_project', { handle: biggestProject.id, include: 'context' })).bytes);
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
  say('  tool text at defaults, the largest over the data set (tokens = bytes / 4; goal <= 5,000 but {view: full}):');
  for (const [label, bytes] of largest)
    say(`    ${label.padEnd(34)} ${String(bytes).padStart(8)} bytes  ${String(tokens(bytes)).padStart(6)} tokens`);
  for (const tool of ['list_projects', 'sync_projects'])
    say(
      `  ${tool} summary / full: ${(largest.get(`${tool} {}`)! / largest.get(`${tool} {view: full}`)!).toFixed(3)} of the bytes`,
    );
}

export async function main(): Promise<void> {
  say('Measured on a shared machine: the absolute rates move with the other load; the ratios are of the same run.');
  const sizes = benchSizes([10_000, 100_000]);
  for (const projects of sizes) await benchSize(projects, projects === sizes[0]);
}

if (import.meta.main) await main();
