import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Budget, GateResult as GateOutcome, Protection, RateGate as Gate } from '../../service/rate/gate.ts';
import { errors } from '../../service/errors.ts';
import type { Harness } from '../support/harness.ts';

/** An official SDK client over Streamable HTTP, carrying the key as the spec says. */
export async function connectClient(baseUrl: string, key: string | null): Promise<Client> {
  const client = new Client({ name: 'pulseboard-test', version: '1.0.0' });
  const headers: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } }));
  return client;
}

/** One JSON-RPC POST to /mcp with plain fetch, for tests that look at the HTTP response itself. */
export async function postRpc(baseUrl: string, key: string | null, body: unknown): Promise<Response> {
  return fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
    },
    body: JSON.stringify(body),
  });
}

/**
 * The JSON-RPC messages of a /mcp response: a JSON body, or the `data:` lines of an SSE stream
 * (a 2026-07-28 listen is a stream; every other answer is JSON).
 */
export async function rpcMessages(res: Response): Promise<any[]> {
  const text = await res.text();
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as unknown);
}

/** The one JSON-RPC message a /mcp response carries. */
export async function rpcMessage(res: Response): Promise<any> {
  const messages = await rpcMessages(res);
  if (messages.length !== 1) throw new Error(`expected one message, got ${messages.length}`);
  return messages[0];
}

export const toolCall = (name: string, args: Record<string, unknown>, id = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

export type GateMode = 'open' | 'protection_down' | 'rate_limited';

/**
 * A gate that records what it was asked to count and refuses on demand: `protection_down`
 * refuses protected requests with 503 (basic ones go on), `rate_limited` refuses all.
 */
export function recordingGate(): Gate & {
  mode: GateMode;
  counted: { keyId: string; protection: Protection; budget: Budget }[];
} {
  const headers = { 'ratelimit-limit': '60', 'ratelimit-remaining': '7', 'ratelimit-reset': '42' };
  const gate = {
    mode: 'open' as GateMode,
    counted: [] as { keyId: string; protection: Protection; budget: Budget }[],
    async check(keyId: string, protection: Protection, budget: Budget = 'requests'): Promise<GateOutcome> {
      gate.counted.push({ keyId, protection, budget });
      if (gate.mode === 'rate_limited') return { ok: false, error: errors.rateLimited(42), headers };
      if (gate.mode === 'protection_down' && protection === 'protected')
        return { ok: false, error: errors.rateProtectionDown(), headers: {} };
      return { ok: true, headers };
    },
  };
  return gate;
}

/** Board fixture: 60 projects (every third with a dossier), votes and a research state on p001. */
export async function seedBoard(h: Harness): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const id = `p${String(i).padStart(3, '0')}`;
    const at = new Date(Date.UTC(2026, 9, 1) + i * 3_600_000).toISOString();
    await h.append('project.sighted', `s-${id}`, `project-${id}`, {
      projectId: id,
      at,
      handle: `h${i}`,
      fol: i * 10,
      name: `Project ${i}`,
    });
    if (i % 3 === 0) {
      await h.append('dossier.written', `d-${id}`, `project-${id}`, {
        projectId: id,
        at,
        dossier: {
          name: `Project ${i}`,
          category: 'defi',
          description: 'A project.',
          stage: 'live',
          confidence: 'low',
          chains: ['base'],
          founders: [],
          backers: [],
          notable: [],
          token: null,
          links: { site: null, docs: null, github: null },
          unverified: [],
          onchain: null,
        },
      });
    }
  }
  await h.append('vote.cast', 'v1', 'project-p001', {
    projectId: 'p001',
    at: '2026-11-01T00:00:00Z',
    voterId: 'u1',
    name: 'Uma',
    avatar: null,
    direction: 'up',
  });
  await h.append('research.updated', 'r1', 'project-p001', {
    projectId: 'p001',
    at: '2026-11-01T00:00:00Z',
    state: 'researching',
    nextEligibleAt: null,
  });
  await h.append('ask.updated', 'u1', 'project-p001', {
    projectId: 'p001',
    askId: 'desk-1',
    status: 'answered',
    answer: 'Yes.',
    at: '2026-11-02T00:00:00Z',
  });
  await h.stores.catchUp();
}

export const ROOT = join(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'node_modules', '.bin');

export type CliRun = { code: number | null; stdout: string; stderr: string };

/** Kills a process started with `detached: true` and everything it started. */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

/** Runs a command (node_modules/.bin on the PATH) in its own process group, killed as a whole if it outlives the timeout. */
export function runCli(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 90_000,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, PATH: `${BIN}:${process.env.PATH ?? ''}`, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => killGroup(child), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON document a CLI prints (it may print other lines around it). */
export function printedJson(out: string): any {
  const start = out.indexOf('{');
  const end = out.lastIndexOf('}');
  assert.ok(start >= 0 && end > start, `no JSON in output: ${out.slice(0, 500)}`);
  return JSON.parse(out.slice(start, end + 1));
}

/** The MCP Inspector CLI against `url` over Streamable HTTP, with the key in a header unless null. */
export function inspector(url: string, key: string | null, args: string[]): Promise<CliRun> {
  const auth = key === null ? [] : ['--header', `Authorization: Bearer ${key}`];
  return runCli('mcp-inspector', ['--cli', url, '--transport', 'http', ...auth, ...args]);
}

/** The tool names the Inspector CLI lists, sorted. */
export async function inspectorToolNames(url: string, key: string): Promise<string[]> {
  const listed = await inspector(url, key, ['--method', 'tools/list']);
  assert.equal(listed.code, 0, listed.stderr);
  return (printedJson(listed.stdout).tools as { name: string }[]).map((t) => t.name).sort();
}

/** A tool call through the Inspector CLI (`name=value` arguments): its structured content. */
export async function inspectorCall(url: string, key: string, tool: string, args: string[]): Promise<any> {
  const called = await inspector(url, key, [
    '--method',
    'tools/call',
    '--tool-name',
    tool,
    ...args.flatMap((a) => ['--tool-arg', a]),
  ]);
  assert.equal(called.code, 0, called.stderr);
  return printedJson(called.stdout).structuredContent;
}
