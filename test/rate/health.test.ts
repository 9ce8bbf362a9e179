import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { createHealth } from '../../service/health.ts';
import { createInProcessLimiter } from '../../service/rate/in-process.ts';
import { createRedisLimiter } from '../../service/rate/redis.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

describe('health', () => {
  let dir: string;
  let server: RedisServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pb-health-'));
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function stores(name: string) {
    const log = createSqliteEventLog(join(dir, `${name}-events.db`));
    const store = createSqliteReadStore(join(dir, `${name}-read.db`));
    const events = Array.from({ length: 5 }, (_, i) => ({ id: `${name}-${i}`, type: 'test.happened', data: { i } }));
    const appended = await log.append('test-1', events);
    assert.ok(appended.ok);
    const positions = appended.events.map((e) => e.position);
    await store.commit('projects', [], positions[4]!);
    await store.commit('pulse', [], positions[1]!);
    return { log, store, head: positions[4]!, pulseCheckpoint: positions[1]! };
  }

  it('is live even when no store can be read', async () => {
    const { log, store } = await stores('live');
    await log.close();
    await store.close();
    const health = createHealth({ log, store, collections: ['projects'] });
    assert.deepEqual(health.live(), { status: 'ok' });
    assert.equal((await health.ready()).ready, false);
  });

  it('is ready with every store reachable and reports lag per collection', async () => {
    const { log, store, head, pulseCheckpoint } = await stores('up');
    const limiter = createRedisLimiter({ url: server.url, limit: 60 });
    try {
      const health = createHealth({ log, store, collections: ['projects', 'pulse', 'calls'], limiter });
      assert.deepEqual(await health.ready(), {
        ready: true,
        status: 'ready',
        checks: { eventLog: 'ok', readStore: 'ok', rateLimiter: 'ok' },
        background: {},
        lag: { projects: 0, pulse: head - pulseCheckpoint, calls: head },
        reasons: [],
      });
    } finally {
      await limiter.close();
      await log.close();
      await store.close();
    }
  });

  it('stays ready but reports the limiter degraded while the configured Redis is stopped', async () => {
    const { log, store } = await stores('redis-down');
    const down = await startRedisServer();
    const limiter = createRedisLimiter({ url: down.url, limit: 60 });
    try {
      const health = createHealth({ log, store, collections: ['projects'], limiter });
      assert.equal((await health.ready()).status, 'ready');
      await down.stop();
      // Basic reads go on unlimited: an orchestrator must keep the instance in rotation.
      const result = await health.ready();
      assert.equal(result.ready, true);
      assert.equal(result.status, 'degraded');
      assert.deepEqual(result.checks, { eventLog: 'ok', readStore: 'ok', rateLimiter: 'degraded' });
      assert.deepEqual(result.lag, { projects: 0 });
      // Limiting resumes by itself when Redis returns, and readiness with it.
      await down.restart();
      let again = await health.ready();
      // The client reconnects on its own schedule: wait for it (bounded), then check the answer.
      for (let attempt = 0; attempt < 150 && again.status !== 'ready'; attempt += 1) {
        await sleep(100);
        again = await health.ready();
      }
      assert.deepEqual(again.checks, { eventLog: 'ok', readStore: 'ok', rateLimiter: 'ok' });
      assert.equal(again.status, 'ready');
    } finally {
      await limiter.close();
      await down.close();
      await log.close();
      await store.close();
    }
  });

  it('is not ready when the read store is closed, and says which check failed', async () => {
    const { log, store } = await stores('store-closed');
    await store.close();
    const health = createHealth({
      log,
      store,
      collections: ['projects'],
      limiter: createInProcessLimiter({ limit: 60 }),
    });
    assert.deepEqual(await health.ready(), {
      ready: false,
      status: 'not_ready',
      checks: { eventLog: 'ok', readStore: 'unreachable', rateLimiter: 'ok' },
      background: {},
      lag: { projects: null },
      reasons: ['readStore: unreachable'],
    });
    await log.close();
  });

  it('is degraded, still in rotation, when the event log is closed (reads come from the read store)', async () => {
    const { log, store } = await stores('log-closed');
    await log.close();
    const health = createHealth({ log, store, collections: ['projects'] });
    assert.deepEqual(await health.ready(), {
      ready: true,
      status: 'degraded',
      checks: { eventLog: 'unreachable', readStore: 'ok' },
      background: {},
      lag: { projects: null },
      reasons: ['eventLog: unreachable'],
    });
    await store.close();
  });

  it('counts a probe that never answers as failed instead of hanging', async () => {
    const { log, store } = await stores('hung');
    const never = { ping: () => new Promise<boolean>(() => {}) };
    const health = createHealth({ log, store, collections: [], limiter: never, probeTimeoutMs: 50 });
    assert.deepEqual(await health.ready(), {
      ready: true,
      status: 'degraded',
      checks: { eventLog: 'ok', readStore: 'ok', rateLimiter: 'degraded' },
      background: {},
      lag: {},
      reasons: ['rateLimiter: degraded'],
    });
    await log.close();
    await store.close();
  });
});
