/**
 * Issue 18, item 2: a start on a busy port fails fast (one line, exit 1, before it opens any store:
 * nothing is loaded or issued), and the next start on a free port still hands the user a key; a later
 * start says how to issue another, and that command's key works.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, it } from 'vitest';
import { examples, line } from '../ingest/examples.ts';
import { CLI, runCli } from '../support/cli.ts';

/** A guard against a start that never ends (it would retry or wait), not a measure of speed. */
const HANG_MS = 120_000;

function holdPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 });
    });
  });
}

type Started = { child: ChildProcess; url: string; key: string | null; hint: string | null };

/** Starts serve and reads stdout until it listens and has said how the user gets a key. */
async function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'serve'], {
    env: { PATH: process.env['PATH'] ?? '', PULSEBOARD_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let url = '';
  for await (const line of createInterface({ input: child.stdout! })) {
    const listening = /listening on (http:\/\/\S+)\/v1/.exec(line);
    if (listening) url = listening[1]!;
    if (/^pbk_[A-Za-z0-9_-]{43}$/.test(line)) return { child, url, key: line, hint: null };
    if (/^API key: /.test(line)) return { child, url, key: null, hint: line };
  }
  throw new Error('serve ended before it listened');
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const board = (url: string, key: string) =>
  fetch(`${url}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });

describe('serve on a busy port', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-busy-port-'));
  const dataDir = join(dir, 'data');
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(children.map(stop));
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 1 with one line before opening any store, then the next start still gives the user a key', async () => {
    const held = await holdPort();
    const deadline = AbortSignal.timeout(HANG_MS);
    const busy = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'serve'], {
      env: { PATH: process.env['PATH'] ?? '', PULSEBOARD_DATA_DIR: dataDir, PORT: String(held.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: deadline,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    busy.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    busy.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    busy.on('error', () => {}); // the abort is reported through the exit below
    const [code, signal] = (await new Promise((resolve) => busy.on('close', (c, s) => resolve([c, s])))) as [
      number | null,
      string | null,
    ];
    held.server.close();
    assert.equal(signal, null, `still running after ${HANG_MS} ms (killed); stderr: ${stderr}`);
    assert.equal(code, 1, stderr);
    assert.equal(stdout, '', 'no key or URL printed by a server that never listened');
    assert.equal(stderr.trim().split('\n').length, 1, stderr);
    assert.match(stderr, new RegExp(`^pulseboard serve: port ${held.port} on 127\\.0\\.0\\.1 is already in use`));
    assert.equal(existsSync(dataDir), false, 'nothing was loaded or issued before the port was known to be free');

    const first = await start({ PULSEBOARD_DATA_DIR: dataDir, PORT: '0' });
    children.push(first.child);
    assert.ok(first.key, 'the first start that listens prints the key');
    assert.equal((await board(first.url, first.key)).status, 200);
    await stop(first.child);

    const second = await start({ PULSEBOARD_DATA_DIR: dataDir, PORT: '0' });
    children.push(second.child);
    assert.equal(second.key, null, 'a key is printed once');
    assert.match(second.hint ?? '', /issue another with: npx pulseboard keys issue --owner local$/);
    const issued = await runCli(['keys', 'issue', '--owner', 'local'], { env: { PULSEBOARD_DATA_DIR: dataDir } });
    assert.equal(issued.code, 0, issued.stderr);
    const response = await board(second.url, issued.stdout.trim());
    assert.equal(response.status, 200);
    assert.ok(((await response.json()) as { projects: unknown[] }).projects.length > 0);
  });

  it('a data directory that ingest filled before the first serve still gets a ready-to-use local key', async () => {
    const filled = join(dir, 'filled');
    const ingested = await runCli(['ingest', '-'], {
      env: { PULSEBOARD_DATA_DIR: filled },
      stdin: `${line(examples['project.sighted'])}\n`,
    });
    assert.equal(ingested.code, 0, ingested.stderr);
    const started = await start({ PULSEBOARD_DATA_DIR: filled, PORT: '0' });
    children.push(started.child);
    assert.ok(started.key, 'a key is printed although the sample was not loaded');
    const board = await fetch(`${started.url}/v1/projects`, { headers: { authorization: `Bearer ${started.key}` } });
    assert.equal(board.status, 200);
    // Allowlisted and linked, as the start-up message says: the thesis feed answers instead of 403.
    const feed = await fetch(`${started.url}/v1/thesisfeed/theses?contract=0x${'1'.repeat(40)}`, {
      headers: { authorization: `Bearer ${started.key}` },
    });
    assert.equal(feed.status, 200, await feed.text());
  });

  it('a HOST this machine does not have is refused the same way: one line naming it, exit 1', async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): never a local address.
    const run = await runCli(['serve'], {
      env: { PULSEBOARD_DATA_DIR: join(dir, 'other'), HOST: '192.0.2.1', PORT: '18080' },
    });
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(
      run.stderr,
      /^pulseboard serve: cannot listen on 192\.0\.2\.1:18080: no such local address \(check HOST\)/,
    );
  });
});
