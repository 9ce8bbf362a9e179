import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { promisify } from 'node:util';
import { startServe, stopChild } from '../support/cli.ts';
import { boardPageSchema } from '../../readmodels/schemas.ts';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '../../bin/pulseboard.ts');
const NODE_ARGS = ['--disable-warning=ExperimentalWarning', BIN];

describe('pulseboard serve on an empty data directory', () => {
  let dir: string;
  let child: ChildProcess;
  let url = '';
  let key = '';
  const env = () => ({ ...process.env, PULSEBOARD_DATA_DIR: dir, PORT: '0', PULSEBOARD_LOG_LEVEL: 'silent' });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-serve-'));
    ({ child, url, key } = await startServe({ PULSEBOARD_DATA_DIR: dir }, { key: true }));
  });

  afterAll(async () => {
    await stopChild(child, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the sample, prints a working key, and serves page 1 with 50 projects and totals', async () => {
    assert.ok(url, 'printed its URL');
    assert.ok(key, 'printed a key');
    const res = await fetch(`${url}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as any;
    assert.ok(boardPageSchema.safeParse(body).success);
    assert.equal(body.projects.length, 50);
    assert.equal(body.total, 300);
    assert.equal(body.totalPages, 6);
  });

  it('honours keys issued and revoked by the CLI on the very next request', async () => {
    const issued = await run(process.execPath, [...NODE_ARGS, 'keys', 'issue', '--owner', 'cli-user'], { env: env() });
    const newKey = issued.stdout.trim();
    assert.match(newKey, /^pbk_[A-Za-z0-9_-]{43}$/);
    assert.equal((await fetch(`${url}/v1/projects`, { headers: { authorization: `Bearer ${newKey}` } })).status, 200);
    const listed = await run(process.execPath, [...NODE_ARGS, 'keys', 'list'], { env: env() });
    const row = listed.stdout.split('\n').find((l) => l.includes('\tcli-user\t'));
    assert.ok(row, 'keys list shows the new key');
    assert.ok(!listed.stdout.includes(newKey), 'keys list never shows a key');
    await run(process.execPath, [...NODE_ARGS, 'keys', 'revoke', row.split('\t')[0]!], { env: env() });
    assert.equal((await fetch(`${url}/v1/projects`, { headers: { authorization: `Bearer ${newKey}` } })).status, 401);
  });

  it('stops cleanly on SIGTERM', async () => {
    assert.equal(child.exitCode, null, 'the server was still running');
    assert.equal(child.signalCode, null, 'the server was still running');
    assert.equal(await stopChild(child, 'SIGTERM'), 0);
  });
});
