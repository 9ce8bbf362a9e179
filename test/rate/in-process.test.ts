import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { createInProcessLimiter } from '../../service/rate/in-process.ts';

const T0 = 1_750_000_000_000;

function clock(start = T0) {
  let t = start;
  return { now: () => t, set: (ms: number) => (t = ms), advance: (ms: number) => (t += ms) };
}

describe('in-process limiter', () => {
  it('counts remaining down and refuses the 61st request in the window, saying how long is left', async () => {
    const c = clock();
    const limiter = createInProcessLimiter({ limit: 60, now: c.now });
    for (let i = 1; i <= 60; i += 1) {
      const d = await limiter.consume('key-a');
      assert.deepEqual(d, { ok: true, limit: 60, remaining: 60 - i, resetSeconds: 60 });
    }
    c.advance(20_500);
    const refused = await limiter.consume('key-a');
    // All 60 were counted at T0; they stop counting at T0 + 60 s, 39.5 s from now.
    assert.deepEqual(refused, {
      ok: false,
      reason: 'limited',
      limit: 60,
      remaining: 0,
      resetSeconds: 40,
      retryAfterSeconds: 40,
    });
  });

  it('is a sliding window: a request counts for exactly the window, not to a fixed edge', async () => {
    const c = clock();
    const limiter = createInProcessLimiter({ limit: 60, now: c.now });
    for (let i = 0; i < 30; i += 1) await limiter.consume('k');
    c.advance(10_000);
    for (let i = 0; i < 30; i += 1) await limiter.consume('k');
    c.set(T0 + 59_999);
    assert.deepEqual(await limiter.consume('k'), {
      ok: false,
      reason: 'limited',
      limit: 60,
      remaining: 0,
      resetSeconds: 1,
      retryAfterSeconds: 1,
    });
    c.set(T0 + 60_000);
    // The 30 from T0 have aged out; the 30 from T0+10 s still count, as does this one.
    assert.deepEqual(await limiter.consume('k'), { ok: true, limit: 60, remaining: 29, resetSeconds: 10 });
    for (let i = 0; i < 29; i += 1) await limiter.consume('k');
    const refused = await limiter.consume('k');
    assert.equal(refused.ok, false);
    assert.equal(refused.ok === false && refused.reason === 'limited' && refused.retryAfterSeconds, 10);
  });

  it('does not count refused requests: waiting the Retry-After it gave is enough', async () => {
    const c = clock();
    const limiter = createInProcessLimiter({ limit: 3, windowSeconds: 10, now: c.now });
    for (let i = 0; i < 3; i += 1) await limiter.consume('k');
    c.advance(2_300);
    let last = await limiter.consume('k');
    for (let i = 0; i < 50; i += 1) last = await limiter.consume('k');
    assert.ok(!last.ok && last.reason === 'limited');
    assert.equal(last.retryAfterSeconds, 8); // 7.7 s left, rounded up
    c.advance(last.retryAfterSeconds * 1000);
    assert.deepEqual(await limiter.consume('k'), { ok: true, limit: 3, remaining: 2, resetSeconds: 10 });
  });

  it('rounds reset up to whole seconds and never reports 0', async () => {
    const c = clock();
    const limiter = createInProcessLimiter({ limit: 2, now: c.now });
    await limiter.consume('k');
    c.advance(59_001);
    assert.deepEqual(await limiter.consume('k'), { ok: true, limit: 2, remaining: 0, resetSeconds: 1 });
    c.advance(998); // 1 ms before the first request ages out
    const refused = await limiter.consume('k');
    assert.ok(!refused.ok && refused.reason === 'limited');
    assert.equal(refused.retryAfterSeconds, 1);
  });

  it('keeps separate budgets per key', async () => {
    const c = clock();
    const limiter = createInProcessLimiter({ limit: 2, now: c.now });
    await limiter.consume('a');
    await limiter.consume('a');
    assert.equal((await limiter.consume('a')).ok, false);
    assert.deepEqual(await limiter.consume('b'), { ok: true, limit: 2, remaining: 1, resetSeconds: 60 });
  });

  it('drops keys whose requests have all aged out', async () => {
    const c = clock();
    const limiter = createInProcessLimiter({ limit: 5, now: c.now });
    for (let i = 0; i < 100; i += 1) await limiter.consume(`key-${i}`);
    assert.equal(limiter.trackedKeys(), 100);
    c.advance(60_000);
    await limiter.consume('fresh');
    assert.equal(limiter.trackedKeys(), 1);
  });

  it('counts requests that share a millisecond one by one under a high limit', async () => {
    const c = clock();
    const limiter = createInProcessLimiter({ limit: 1_000_000, now: c.now });
    for (let i = 0; i < 10_000; i += 1) await limiter.consume('k');
    const d = await limiter.consume('k');
    assert.deepEqual(d, { ok: true, limit: 1_000_000, remaining: 1_000_000 - 10_001, resetSeconds: 60 });
  });

  it('is always available', async () => {
    const limiter = createInProcessLimiter({ limit: 1 });
    assert.equal(await limiter.ping(), true);
    await limiter.close();
  });
});
