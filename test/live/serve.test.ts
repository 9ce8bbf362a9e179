import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { promisify } from 'node:util';
import { startServe, stopChild } from '../support/cli.ts';
import { openStream } from './support.ts';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '../../bin/pulseboard.ts');
const NODE_ARGS = ['--disable-warning=ExperimentalWarning', BIN];

describe('pulseboard serve: live changes from the projector worker thread, and SIGTERM', () => {
  let dir: string;
  let child: ChildProcess;
  let url = '';
  let key = '';
  const env = () => ({ ...process.env, PULSEBOARD_DATA_DIR: dir, PORT: '0', PULSEBOARD_LOG_LEVEL: 'silent' });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-live-serve-'));
    ({ child, url, key } = await startServe({ PULSEBOARD_DATA_DIR: dir }, { key: true }));
  });

  afterAll(async () => {
    await stopChild(child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (path: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } });

  it('answers a held long-poll when `pulseboard ingest` (another process) writes and the worker thread commits', async () => {
    assert.ok(url && key);
    const cursor = ((await (await get('/v1/projects?since=now')).json()) as { cursor: string }).cursor;
    const held = get(`/v1/projects?cursor=${cursor}&wait=30`);
    const file = join(dir, 'one.ndjson');
    writeFileSync(
      file,
      `${JSON.stringify({ type: 'project.sighted', id: 'live-serve-1', at: '2026-11-21T00:00:00.000Z', data: { projectId: 'prj-live-1', handle: 'live_one' } })}\n`,
    );
    await run(process.execPath, [...NODE_ARGS, 'ingest', file], { env: env() });
    const res = await held;
    assert.equal(res.status, 200);
    const body = (await res.json()) as { projects: { id: string }[]; cursor: string };
    assert.deepEqual(
      body.projects.map((p) => p.id),
      ['prj-live-1'],
    );
    assert.notEqual(body.cursor, cursor);
  });

  it('on SIGTERM ends a held long-poll (empty page, same cursor) and an open stream, and exits 0', async () => {
    const cursor = ((await (await get('/v1/projects?since=now')).json()) as { cursor: string }).cursor;
    const stream = await openStream(`${url}/v1/projects/changes?cursor=${cursor}`, key);
    assert.equal(stream.status, 200);
    const held = get(`/v1/projects?cursor=${cursor}&wait=30`);
    // Let the long-poll reach the server and be held before the signal.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const t0 = performance.now();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const res = await held;
    assert.equal(res.status, 200);
    const body = (await res.json()) as { projects: unknown[]; cursor: string };
    assert.deepEqual(body.projects, []);
    assert.equal(body.cursor, cursor);
    await stream.ended;
    assert.equal(await exited, 0);
    // Well before the 30 s wait: shutdown did not sit the wait out.
    assert.ok(performance.now() - t0 < 15_000, `exited after ${(performance.now() - t0).toFixed(0)} ms`);
  });
});
