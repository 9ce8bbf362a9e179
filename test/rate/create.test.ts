import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { parseConfig } from '../../config/config.ts';
import { createRateLimiter } from '../../service/rate/create.ts';
import type { RedisLimiter } from '../../service/rate/redis.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

function config(env: Record<string, string>) {
  const parsed = parseConfig(env);
  assert.ok(parsed.ok);
  return parsed.config;
}

describe('createRateLimiter', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('limits in-process at the default 60 without REDIS_URL', async () => {
    const limiter = await createRateLimiter(config({}));
    const first = await limiter.consume('kid_default');
    assert.ok(first.ok);
    assert.equal(first.limit, 60);
    assert.equal(first.remaining, 59);
    await limiter.close();
  });

  it('takes the limit from PULSEBOARD_RATE_LIMIT', async () => {
    const limiter = await createRateLimiter(config({ PULSEBOARD_RATE_LIMIT: '2' }));
    await limiter.consume('kid_2');
    await limiter.consume('kid_2');
    const refused = await limiter.consume('kid_2');
    assert.ok(!refused.ok && refused.reason === 'limited' && refused.limit === 2);
    await limiter.close();
  });

  it('gives the Redis client PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS (default 250 ms); refuses a value out of range', async () => {
    const byDefault = (await createRateLimiter(config({ REDIS_URL: server.url }))) as RedisLimiter;
    const set = (await createRateLimiter(
      config({ REDIS_URL: server.url, PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS: '1500' }),
    )) as RedisLimiter;
    try {
      assert.equal(byDefault.client.options.commandTimeout, 250);
      assert.equal(set.client.options.commandTimeout, 1500);
    } finally {
      await byDefault.close();
      await set.close();
    }
    for (const bad of ['5', 'soon', '600000']) {
      const parsed = parseConfig({ PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS: bad });
      assert.ok(!parsed.ok && /PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS/.test(parsed.reason), bad);
    }
  });

  it('uses Redis when REDIS_URL is set, so two limiters share one budget', async () => {
    const env = { REDIS_URL: server.url, PULSEBOARD_RATE_LIMIT: '3', PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS: '5000' };
    const a = await createRateLimiter(config(env));
    const b = await createRateLimiter(config(env));
    try {
      assert.equal((await a.consume('kid_3')).ok, true);
      assert.equal((await b.consume('kid_3')).ok, true);
      assert.equal((await a.consume('kid_3')).ok, true);
      const refused = await b.consume('kid_3');
      assert.ok(!refused.ok && refused.reason === 'limited');
      await server.stop();
      assert.deepEqual(await a.consume('kid_3'), { ok: false, reason: 'unavailable' });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
