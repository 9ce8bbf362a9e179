import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { tools } from '../../mcp/tools.ts';
import { BIN, inspectorCall, inspectorToolNames, killGroup, ROOT, runCli } from './support.ts';

/** Node 24 from the devDependency: the suites' CLIs need it (fs.globSync). */
const NODE = join(BIN, 'node');
const CONFORMANCE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
/** The newest pre-release, installed under an alias beside the stable one. */
const CONFORMANCE_NEXT = join(ROOT, 'node_modules', 'conformance-next', 'dist', 'index.js');
const BASELINES = join(import.meta.dirname, 'conformance');

/**
 * The official server suites, each with its expected-failures file: the scenarios and checks that
 * do not apply to this server (fixtures of the suite's own test server, prompts, elicitation, …),
 * each with its reason. The runner exits non-zero on any other failure and on an entry that passes.
 */
const SUITES = [
  { name: '0.1.16, spec 2025-11-25', cli: CONFORMANCE, args: [], baseline: 'expected-failures-2025-11-25.yml' },
  {
    name: '0.2.0-alpha.12, --spec-version 2026-07-28',
    cli: CONFORMANCE_NEXT,
    args: ['--spec-version', '2026-07-28'],
    baseline: 'expected-failures-2026-07-28.yml',
  },
  {
    name: '0.2.0-alpha.12, --requirements 2026-07-28',
    cli: CONFORMANCE_NEXT,
    args: ['--requirements', '2026-07-28'],
    baseline: 'expected-failures-2026-07-28.yml',
  },
];

/**
 * The conformance CLI cannot send an API key, so it talks to this forwarder, which adds the key and
 * passes everything else (Host and Origin included) through unchanged.
 */
function keyAddingProxy(target: URL, key: string): Promise<Server> {
  const proxy = createServer((incoming, outgoing) => {
    const forwarded = request(
      {
        host: target.hostname,
        port: target.port,
        path: incoming.url,
        method: incoming.method,
        headers: { ...incoming.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve(proxy)));
}

describe('MCP conformance scenarios and the Inspector CLI against `npm start`', () => {
  let dir: string;
  let server: ChildProcess;
  let proxy: Server;
  let url = '';
  let key = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-conformance-'));
    server = spawn('npm', ['start'], {
      cwd: ROOT,
      // The suites send a few hundred requests with one key: budgets that do not get in their way.
      env: {
        ...process.env,
        PULSEBOARD_DATA_DIR: dir,
        PORT: '0',
        PULSEBOARD_LOG_LEVEL: 'silent',
        PULSEBOARD_RATE_LIMIT: '100000',
        PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: '100000',
      },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for await (const line of createInterface({ input: server.stdout! })) {
      const listening = /listening on (http:\/\/\S+)\/v1/.exec(line);
      if (listening) url = `${listening[1]}/mcp`;
      if (/^pbk_[A-Za-z0-9_-]{43}$/.test(line)) key = line;
      if (url && key) break;
    }
    assert.ok(url && key, 'npm start printed its URL and a key');
    proxy = await keyAddingProxy(new URL(url), key);
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      killGroup(server, 'SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  for (const suite of SUITES) {
    it(`passes the official conformance suite ${suite.name}, but for its listed expected failures`, async () => {
      const out = join(dir, `conformance-${SUITES.indexOf(suite)}`);
      const target = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
      const result = await runCli(NODE, [
        suite.cli,
        'server',
        '--url',
        target,
        ...suite.args,
        '--expected-failures',
        join(BASELINES, suite.baseline),
        '-o',
        out,
      ]);
      assert.equal(result.code, 0, `${result.stdout.slice(-4000)}\n${result.stderr}`);
      assert.match(result.stdout, /Baseline check passed/);
      const passed = Number(/Total: (\d+) passed/.exec(result.stdout)?.[1]);
      assert.ok(passed >= 6, `${passed} checks passed`);
    });
  }

  it('the Inspector CLI lists the tools and calls one with the key in a header', async () => {
    assert.deepEqual(await inspectorToolNames(url, key), tools.map((t) => t.name).sort());
    const page = await inspectorCall(url, key, 'sync_projects', ['limit=3']);
    assert.equal(page.projects.length, 3);
    assert.equal(page.hasMore, true);
  });
});
