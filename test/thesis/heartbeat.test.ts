import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, describe, it } from 'vitest';
import { skipFor } from '../support/skip.ts';
import { createWorkerHeartbeat } from '../../service/thesis/create-heartbeat.ts';
import { createInProcessHeartbeat } from '../../service/thesis/in-process-heartbeat.ts';
import { createRedisHeartbeat } from '../../service/thesis/redis-heartbeat.ts';
import { manualClock } from './helpers.ts';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const redisServer = spawnSync('redis-server', ['--version']).status === 0;
const started: ChildProcess[] = [];
afterAll(() => {
  for (const child of started) child.kill();
});

async function startRedis(): Promise<string> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited ${code}`)));
  });
  return `redis://127.0.0.1:${port}`;
}

describe('worker heartbeat', () => {
  it('in-process: alive within the TTL after a beat, not before the first beat, not after end()', async () => {
    const clock = manualClock('2026-11-22T10:00:00.000Z');
    const heartbeat = createInProcessHeartbeat({ ttlMs: 30_000, now: clock.now });
    assert.equal(await heartbeat.isAlive(), false);
    await heartbeat.beat();
    clock.advance(29_999);
    assert.equal(await heartbeat.isAlive(), true);
    clock.advance(1);
    assert.equal(await heartbeat.isAlive(), false);
    await heartbeat.beat();
    await heartbeat.end();
    assert.equal(await heartbeat.isAlive(), false);
  });

  it('without REDIS_URL the heartbeat is in-process', async () => {
    const local = await createWorkerHeartbeat({ REDIS_URL: undefined });
    await local.beat();
    assert.equal(await local.isAlive(), true);
    await local.close();
  });

  it(
    'Redis (chosen when REDIS_URL is set): a beat from one process is seen by another; end() clears it',
    skipFor(redisServer ? false : 'redis-server is not installed'),
    async () => {
      const url = await startRedis();
      const readerSide = createRedisHeartbeat({ url, ttlMs: 30_000 });
      const apiSide = await createWorkerHeartbeat({ REDIS_URL: url });
      try {
        assert.equal(await apiSide.isAlive(), false);
        await readerSide.beat();
        assert.equal(await apiSide.isAlive(), true);
        await readerSide.end();
        assert.equal(await apiSide.isAlive(), false);
      } finally {
        await readerSide.close();
        await apiSide.close();
      }
    },
  );

  it('Redis unreachable: isAlive() answers false instead of hanging, beat() rejects', async () => {
    const port = await freePort(); // nothing listens there
    const heartbeat = createRedisHeartbeat({ url: `redis://127.0.0.1:${port}` });
    try {
      assert.equal(await heartbeat.isAlive(), false);
      await assert.rejects(heartbeat.beat());
      assert.equal(await heartbeat.isAlive(), false);
    } finally {
      await heartbeat.close();
    }
  });
});
