/**
 * Instructions a request, counted by valgrind's callgrind in the server process: a one-project read
 * (GET /v1/projects/{id}) and MCP get_project of the same project in both protocol eras (goal: at most
 * 1.0M a call, issue 58), on the 10k data set. Unlike req/s and
 * CPU time, the count hardly moves with what else the machine runs (runs of one build agree within
 * about 0.6 %), so a change of a few hundred nanoseconds shows; it leaves out the kernel (the sends and
 * receives), which the read bench's figures include. Not part of `npm run bench`: the server runs about
 * fifty times slower under valgrind (two minutes for both reads). Needs valgrind (Debian package valgrind):
 *   node bench/instructions.ts [REQUESTS] [DATA_DIR]
 * DATA_DIR: a copy of a data set to use instead of the cached 10k one (the bench issues a key into it).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NO_WARNING } from '../bin/start-command.ts';
import { dataSetSpec, ensureDataSet } from './dataset.ts';
import { benchKey } from './reads.bench.ts';

type LoadResult = { non2xx: number; errors: number; timeouts: number };
const autocannon = createRequire(import.meta.url)('autocannon') as (options: object) => Promise<LoadResult>;

const run = (command: string, args: string[]) =>
  new Promise<number | null>((resolve) =>
    spawn(command, args, { stdio: 'ignore' }).once('exit', (code) => resolve(code)),
  );

/** Instructions the server ran for `requests` requests made after as many unmeasured ones. */
async function instructionsPerRequest(
  dataDir: string,
  requests: number,
  request: (port: number, id: string) => object,
  key: string,
): Promise<number> {
  const outDir = mkdtempSync(join(tmpdir(), 'pulseboard-callgrind-'));
  try {
    const child = spawn(
      'valgrind',
      [
        '--tool=callgrind',
        '--smc-check=all-non-file',
        `--callgrind-out-file=${join(outDir, 'callgrind.out')}`,
        process.execPath,
        NO_WARNING,
        join(import.meta.dirname, 'reads-server.ts'),
        'app',
        dataDir,
      ],
      // stdin a pipe: the server ends with it (see reads-server.ts).
      { stdio: ['pipe', 'pipe', 'ignore'] },
    );
    const port = await new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`server under valgrind exited (${code})`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const match = /^listening (\d+)$/.exec(line);
        if (match) resolve(Number(match[1]));
      });
    });
    const page = (await (
      await fetch(`http://127.0.0.1:${port}/v1/projects?page=1`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as { projects: { id: string }[] };
    const options = { ...request(port, page.projects[0]!.id), connections: 2, amount: requests, timeout: 120 };
    const load = async () => {
      const result = await autocannon(options);
      if (result.non2xx + result.errors + result.timeouts > 0)
        throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
    };
    await load();
    // Counting from zero after the warm-up, up to a dump after the measured requests.
    await run('callgrind_control', ['--zero', String(child.pid)]);
    await load();
    await run('callgrind_control', ['--dump', String(child.pid)]);
    await new Promise<void>((resolve) => {
      child.removeAllListeners('exit');
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
    const dump = readdirSync(outDir).find((name) => /^callgrind\.out\.\d+$/.test(name));
    const total =
      dump === undefined ? undefined : /^summary: (\d+)$/m.exec(readFileSync(join(outDir, dump), 'utf8'))?.[1];
    if (total === undefined) throw new Error('callgrind wrote no dump for the measured requests');
    return Number(total) / requests;
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

/** The 2026-07-28 envelope of a request. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

export type InstructionCounts = { rest: number; legacy: number; modern: number };

/** Instructions a request of each read, or null without valgrind. */
export async function countInstructions(requests: number, dataDir?: string): Promise<InstructionCounts | null> {
  if (spawnSync('valgrind', ['--version']).status !== 0 || spawnSync('callgrind_control', ['--version']).status !== 0)
    return null;
  dataDir ??= await ensureDataSet(dataSetSpec(10_000));
  const key = await benchKey(dataDir);
  const authorization = `Bearer ${key}`;
  const rest = await instructionsPerRequest(
    dataDir,
    requests,
    (port, id) => ({ url: `http://127.0.0.1:${port}/v1/projects/${id}`, headers: { authorization } }),
    key,
  );
  const headers = { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const call = (modern: boolean) => (port: number, id: string) => ({
    url: `http://127.0.0.1:${port}/mcp`,
    method: 'POST',
    headers: modern
      ? { ...headers, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'get_project' }
      : headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_project', arguments: { handle: id }, ...(modern ? { _meta: MODERN_META } : {}) },
    }),
  });
  // Each figure as soon as it is measured: a later run that fails (a loaded machine) keeps the earlier ones.
  process.stderr.write(`  instructions, one project (REST): ${rest.toFixed(0)}\n`);
  const legacy = await instructionsPerRequest(dataDir, requests, call(false), key);
  process.stderr.write(`  instructions, MCP get_project 2025-11-25: ${legacy.toFixed(0)}\n`);
  const modern = await instructionsPerRequest(dataDir, requests, call(true), key);
  return { rest, legacy, modern };
}

export async function main(): Promise<void> {
  const requests = Number(process.argv[2] ?? '3000');
  const counts = await countInstructions(requests, process.argv[3]);
  if (counts === null) {
    process.stdout.write('instructions: skipped, valgrind is not installed (Debian package valgrind)\n');
    return;
  }
  process.stdout.write(
    `instructions a request (server process, user space, ${requests} requests after as many unmeasured):\n`,
  );
  process.stdout.write(
    `  one project (REST)           ${counts.rest.toFixed(0)}\n` +
      `  MCP get_project, 2025-11-25  ${counts.legacy.toFixed(0)} (goal <= 1,000,000)\n` +
      `  MCP get_project, 2026-07-28  ${counts.modern.toFixed(0)} (goal <= 1,000,000)\n`,
  );
}

if (import.meta.main) await main();
