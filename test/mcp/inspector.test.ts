import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { tools } from '../../mcp/tools.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { makeCall, recordCall } from '../support/calls-fixtures.ts';
import { seedBoard } from './support.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'node_modules', '.bin');
const IMPLEMENTED = tools.map((tool) => tool.name).sort();

type Run = { code: number | null; stdout: string; stderr: string };

/** Runs a command in its own process group, killed as a whole if it outlives the timeout. */
function run(command: string, args: string[], env: Record<string, string> = {}, timeoutMs = 90_000): Promise<Run> {
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
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
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

/** The JSON document the CLI prints (it may print other lines around it). */
function printedJson(out: string): any {
  const start = out.indexOf('{');
  const end = out.lastIndexOf('}');
  assert.ok(start >= 0 && end > start, `no JSON in output: ${out.slice(0, 500)}`);
  return JSON.parse(out.slice(start, end + 1));
}

describe('MCP Inspector CLI against a running server', () => {
  let h: Harness;
  let url: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ now: () => new Date('2026-11-20T08:00:00.000Z') });
    key = await h.key('inspector', ['allow']);
    await seedBoard(h);
    for (let n = 0; n < 3; n++)
      await recordCall(h, makeCall(n, { createdAt: new Date(Date.UTC(2026, 10, 1, n)).toISOString(), tokens: 1 }));
    await h.stores.catchUp();
    url = `${await h.app.listen({ host: '127.0.0.1', port: 0 })}/mcp`;
  });
  afterAll(() => h.close());

  it('lists the tools and calls get_project, sync_projects and list_calltracker_calls with --header "Authorization: Bearer KEY", as REST answers', async () => {
    const auth = ['--header', `Authorization: Bearer ${key}`];
    const listed = await run('mcp-inspector', ['--cli', url, '--transport', 'http', ...auth, '--method', 'tools/list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      printedJson(listed.stdout)
        .tools.map((t: any) => t.name)
        .sort(),
      IMPLEMENTED,
    );
    const call = async (tool: string, args: string[]) => {
      const called = await run('mcp-inspector', [
        '--cli',
        url,
        '--transport',
        'http',
        ...auth,
        '--method',
        'tools/call',
        '--tool-name',
        tool,
        ...args.flatMap((a) => ['--tool-arg', a]),
      ]);
      assert.equal(called.code, 0, called.stderr);
      return printedJson(called.stdout).structuredContent;
    };
    assert.deepEqual(await call('get_project', ['handle=h4']), (await h.get('/v1/projects/h4', key)).json());
    const page = await call('sync_projects', ['limit=3']);
    const rest = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=3', key)).json();
    assert.deepEqual(page, { ...rest, readAt: page.readAt });
    const calls = await call('list_calltracker_calls', ['limit=2']);
    const restCalls = (await h.get('/v1/calltracker/calls?limit=2', key)).json();
    assert.equal(restCalls.calls.length, 2);
    assert.deepEqual(calls, { ...restCalls, readAt: calls.readAt });
  });

  it('fails without the key', async () => {
    const refused = await run('mcp-inspector', ['--cli', url, '--transport', 'http', '--method', 'tools/list']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stdout + refused.stderr, /"code":"unauthorized"/);
  });
});
