import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../replay/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { day } from '../support/events.ts';

const rateHeaders = (headers: Record<string, unknown>) => ({
  limit: headers['ratelimit-limit'],
  remaining: headers['ratelimit-remaining'],
  reset: headers['ratelimit-reset'],
});

async function seedOne(h: Harness) {
  await h.append('project.sighted', 's1', 'project-p1', { projectId: 'p1', at: day(0), handle: 'one' });
  await h.stores.catchUp();
}

describe('REST rate protection, in-process', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '60' } });
    await seedOne(h);
  });
  afterAll(() => h.close());

  it('allows 60 requests per key with counting headers, refuses the 61st with Retry-After', async () => {
    const key = await h.key('busy');
    const other = await h.key('calm');
    for (let i = 1; i <= 60; i++) {
      const res = await h.get('/v1/projects/p1', key);
      assert.equal(res.status, 200);
      assert.deepEqual(rateHeaders(res.headers), {
        limit: '60',
        remaining: String(60 - i),
        reset: res.headers['ratelimit-reset'],
      });
      assert.ok(Number(res.headers['ratelimit-reset']) >= 1 && Number(res.headers['ratelimit-reset']) <= 60);
    }
    const refused = await h.get('/v1/projects', key);
    assert.equal(refused.status, 429);
    assert.equal(refused.json().error.code, 'rate_limited');
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60);
    assert.equal(refused.headers['ratelimit-remaining'], '0');
    // Another key has its own budget; failed authentication is not counted against anyone.
    assert.equal((await h.get('/v1/projects', other)).status, 200);
    assert.equal((await h.get('/v1/projects')).status, 401);
  });

  it('serves health outside /v1 without a key or counting', async () => {
    const live = await h.get('/healthz');
    assert.equal(live.status, 200);
    assert.deepEqual(live.json(), { status: 'ok' });
    await h.stores.catchUp();
    const ready = await h.get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.json().ready, true);
    assert.equal(ready.json().lag.projects, 0);
  });
});

describe('REST rate protection on a real Redis', () => {
  let redis: RedisServer;
  let a: Harness;
  let b: Harness;
  beforeAll(async () => {
    redis = await startRedisServer();
    // A generous Redis timeout: on a loaded machine a slow answer would otherwise read as an outage
    // (basic reads unlimited, protected ones 503), which these tests provoke on purpose by stopping Redis.
    const env = { REDIS_URL: redis.url, PULSEBOARD_RATE_LIMIT: '10', PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS: '5000' };
    a = await createHarness({ env });
    // A second service instance with its own stores: only the Redis budget is shared.
    b = await createHarness({ env });
    await seedOne(a);
    await seedOne(b);
    // Both limiters connected before anything is counted: on a loaded machine a slow first connect reads as an outage.
    for (const h of [a, b]) assert.ok(await eventually(() => h.limiter.ping(), 250, 40), 'Redis answers');
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await redis.close();
  });

  it('shares one budget between two instances', async () => {
    const key = await a.key('shared');
    // The same key must exist in both instances' logs: copy its issue event.
    const [issued] = await a.stores.log.readAll({ afterPosition: 0, typePrefixes: ['key.issued'], limit: 10 });
    await b.stores.log.append(issued!.stream, [{ id: issued!.id, type: issued!.type, data: issued!.data }]);
    // Access is served from the keys read model: project the copied event there too.
    await b.stores.catchUp();
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await (i % 2 === 0 ? a : b).get('/v1/projects', key)).status);
    assert.deepEqual(statuses, [...Array(10).fill(200), 429]);
  });

  it('degrades when Redis dies: basic reads go on unlimited, protected ones answer 503 Retry-After 60, and counting resumes', async () => {
    const key = await a.key('degrade');
    assert.equal((await a.get('/v1/projects/p1?include=context', key)).status, 200);
    await redis.stop();
    for (let i = 0; i < 15; i++) {
      const basic = await a.get('/v1/projects', key);
      assert.equal(basic.status, 200);
      assert.equal(basic.headers['ratelimit-limit'], undefined);
    }
    assert.equal((await a.get('/v1/projects/p1', key)).status, 200);
    const protectedRead = await a.get('/v1/projects/p1?include=context', key);
    assert.equal(protectedRead.status, 503);
    assert.equal(protectedRead.headers['retry-after'], '60');
    assert.equal(protectedRead.json().error.code, 'unavailable');
    assert.match(protectedRead.json().error.message, /60 seconds/);

    await redis.restart();
    let counted = false;
    for (let attempt = 0; attempt < 100 && !counted; attempt++) {
      const res = await a.get('/v1/projects', key);
      counted = res.headers['ratelimit-limit'] === '10';
      if (!counted) await sleep(100);
    }
    assert.ok(counted, 'limiting resumed without a restart of the service');
  });

  it('does not stall basic reads on a Redis that stopped answering', async () => {
    const key = await a.key('stall');
    redis.pause();
    try {
      // Ordering, not timing: the read completes while Redis is still paused.
      const res = await a.get('/v1/projects', key);
      assert.equal(res.status, 200);
    } finally {
      redis.resume();
    }
  });
});
