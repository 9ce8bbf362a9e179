import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { createRateGate } from '../../service/rate/gate.ts';
import type { RateDecision } from '../../service/rate/port.ts';
import { createRedisLimiter, rateKey, type RedisLimiter } from '../../service/rate/redis.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

const T0 = 1_750_000_000_000;

async function redisNowMs(client: Redis): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Polls (bounded) until the limiter counts again; returns the first decision that is not 'unavailable'. */
async function untilCounting(limiter: RedisLimiter, keyId: string): Promise<RateDecision> {
  for (let attempt = 0; attempt < 150; attempt += 1) {
    const decision = await limiter.consume(keyId);
    if (decision.ok || decision.reason !== 'unavailable') return decision;
    await sleep(100);
  }
  throw new Error('the limiter did not resume counting');
}

describe('Redis limiter', () => {
  let server: RedisServer;
  const limiters: RedisLimiter[] = [];
  const open = (options: Omit<Parameters<typeof createRedisLimiter>[0], 'url'>) => {
    // Counting tests: a generous timeout, so a slow answer on a loaded machine is not read as an outage.
    const limiter = createRedisLimiter({ url: server.url, commandTimeoutMs: 5000, ...options });
    limiters.push(limiter);
    return limiter;
  };

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    await server.close();
  });

  it("refuses the 61st request with a Retry-After that is the oldest counted request's remaining life", async () => {
    const limiter = open({ limit: 60 });
    for (let i = 1; i <= 60; i += 1) {
      const d = await limiter.consume('real-clock');
      assert.ok(d.ok);
      assert.equal(d.remaining, 60 - i);
      assert.equal(d.limit, 60);
    }
    const before61 = await redisNowMs(limiter.client);
    const refused = await limiter.consume('real-clock');
    const after61 = await redisNowMs(limiter.client);
    assert.ok(!refused.ok && refused.reason === 'limited', `expected limited, got ${JSON.stringify(refused)}`);
    assert.ok(refused.retryAfterSeconds >= 1 && refused.retryAfterSeconds <= 60);
    assert.equal(refused.resetSeconds, refused.retryAfterSeconds);

    const key = rateKey('real-clock');
    const scores = (await limiter.client.zrange(key, 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
    assert.equal(scores.length, 60, 'the refused request is not counted');
    const oldestExpiry = Math.min(...scores) + 60_000;
    // The script ran between the two TIME reads, so its answer lies between what each would give.
    assert.ok(refused.retryAfterSeconds >= Math.ceil((oldestExpiry - after61) / 1000));
    assert.ok(refused.retryAfterSeconds <= Math.ceil((oldestExpiry - before61) / 1000));
    // The key outlives every entry it holds and no more than a window.
    const pttl = await limiter.client.pttl(key);
    const checked = await redisNowMs(limiter.client);
    assert.ok(pttl > 0 && pttl <= 60_000);
    assert.ok(pttl >= Math.max(...scores) + 60_000 - checked - 1);
  });

  it('follows the same sliding window as the in-process limiter (stepped clock)', async () => {
    let t = T0;
    const limiter = open({ limit: 60, now: () => t });
    for (let i = 1; i <= 60; i += 1) {
      assert.deepEqual(await limiter.consume('stepped'), { ok: true, limit: 60, remaining: 60 - i, resetSeconds: 60 });
    }
    t = T0 + 20_500;
    assert.deepEqual(await limiter.consume('stepped'), {
      ok: false,
      reason: 'limited',
      limit: 60,
      remaining: 0,
      resetSeconds: 40,
      retryAfterSeconds: 40,
    });
    t = T0 + 59_999;
    assert.deepEqual(await limiter.consume('stepped'), {
      ok: false,
      reason: 'limited',
      limit: 60,
      remaining: 0,
      resetSeconds: 1,
      retryAfterSeconds: 1,
    });
    t = T0 + 60_000;
    assert.deepEqual(await limiter.consume('stepped'), { ok: true, limit: 60, remaining: 59, resetSeconds: 60 });
  });

  it('keeps separate budgets per key', async () => {
    const limiter = open({ limit: 2 });
    await limiter.consume('sep-a');
    await limiter.consume('sep-a');
    const refused = await limiter.consume('sep-a');
    assert.ok(!refused.ok && refused.reason === 'limited');
    const other = await limiter.consume('sep-b');
    assert.ok(other.ok);
    assert.equal(other.remaining, 1);
  });

  it('shares one budget between two limiter instances on one Redis', async () => {
    const first = open({ limit: 4 });
    const second = open({ limit: 4 });
    assert.equal((await first.consume('shared')).ok, true);
    assert.equal((await second.consume('shared')).ok, true);
    assert.equal((await first.consume('shared')).ok, true);
    const last = await second.consume('shared');
    assert.ok(last.ok);
    assert.equal(last.remaining, 0);
    const refusedFirst = await first.consume('shared');
    const refusedSecond = await second.consume('shared');
    assert.ok(!refusedFirst.ok && refusedFirst.reason === 'limited');
    assert.ok(!refusedSecond.ok && refusedSecond.reason === 'limited');
  });

  it('stores only pb:rate:<keyId> keys', async () => {
    const limiter = open({ limit: 5 });
    await limiter.consume('kid_naming');
    assert.deepEqual(await limiter.client.keys('*naming*'), ['pb:rate:kid_naming']);
  });

  it('applies a per-call limit to its own key (the protocol budget)', async () => {
    const limiter = open({ limit: 1 });
    assert.equal((await limiter.consume('kid_proto:protocol', 3)).ok, true);
    assert.equal((await limiter.consume('kid_proto:protocol', 3)).ok, true);
    const third = await limiter.consume('kid_proto:protocol', 3);
    assert.ok(third.ok && third.limit === 3 && third.remaining === 0);
    const fourth = await limiter.consume('kid_proto:protocol', 3);
    assert.ok(!fourth.ok && fourth.reason === 'limited');
    // The key's own budget (limit 1) is separate.
    assert.equal((await limiter.consume('kid_proto')).ok, true);
    assert.deepEqual((await limiter.client.keys('*kid_proto*')).sort(), [
      'pb:rate:kid_proto',
      'pb:rate:kid_proto:protocol',
    ]);
  });

  it('answers ping while Redis is up', async () => {
    assert.equal(await open({ limit: 1 }).ping(), true);
  });
});

describe('Redis limiter when Redis fails', () => {
  let server: RedisServer;
  let limiter: RedisLimiter;

  beforeAll(async () => {
    server = await startRedisServer();
    limiter = createRedisLimiter({ url: server.url, limit: 60 });
  });
  afterAll(async () => {
    server.resume();
    await limiter.close();
    await server.close();
  });

  it('degrades per protection when Redis is killed, and counts again after a restart on the same port', async () => {
    const gate = createRateGate(limiter);
    const up = await gate.check('killed', 'protected');
    assert.equal(up.ok, true);
    assert.equal(up.headers['ratelimit-remaining'], '59');

    await server.stop();
    assert.deepEqual(await limiter.consume('killed'), { ok: false, reason: 'unavailable' });
    assert.deepEqual(await gate.check('killed', 'basic'), { ok: true, headers: {} });
    const refused = await gate.check('killed', 'protected');
    assert.ok(!refused.ok);
    assert.deepEqual(refused.error, {
      status: 503,
      code: 'unavailable',
      message: 'Rate protection is unavailable; wait 60 seconds and retry.',
      retryAfter: 60,
    });
    assert.deepEqual(refused.headers, { 'retry-after': '60' });
    assert.equal(await limiter.ping(), false);

    await server.restart();
    const resumed = await untilCounting(limiter, 'killed');
    // A fresh Redis has no memory of the earlier request: counting starts over.
    assert.deepEqual(resumed, { ok: true, limit: 60, remaining: 59, resetSeconds: 60 });
    assert.equal(await limiter.ping(), true);
  });

  it('answers a basic check while Redis is paused (SIGSTOP), then resumes counting', async () => {
    assert.equal((await untilCounting(limiter, 'paused')).ok, true);
    server.pause();
    let basic;
    let protectedCheck;
    let pinged;
    try {
      const gate = createRateGate(limiter);
      basic = await gate.check('paused', 'basic');
      protectedCheck = await gate.check('paused', 'protected');
      pinged = await limiter.ping();
    } finally {
      // Only reached once the checks above resolved: they did not wait for Redis to answer.
      server.resume();
    }
    assert.deepEqual(basic, { ok: true, headers: {} });
    assert.equal(protectedCheck.ok, false);
    assert.equal(!protectedCheck.ok && protectedCheck.error.status, 503);
    assert.equal(pinged, false);

    const resumed = await untilCounting(limiter, 'paused-after');
    assert.equal(resumed.ok, true);
  });
});

describe('Redis limiter with nothing listening', () => {
  it('reports unavailable and closes cleanly', async () => {
    const server = await startRedisServer();
    const url = server.url;
    await server.close();
    const limiter = createRedisLimiter({ url, limit: 60 });
    try {
      assert.deepEqual(await limiter.consume('nobody'), { ok: false, reason: 'unavailable' });
      assert.equal(await limiter.ping(), false);
    } finally {
      await limiter.close();
    }
    // Closed for good: no reconnect brings it back (a pending reconnect timer would also keep this file from ending).
    assert.notEqual(limiter.client.status, 'ready');
    assert.deepEqual(await limiter.consume('nobody'), { ok: false, reason: 'unavailable' });
  });
});
