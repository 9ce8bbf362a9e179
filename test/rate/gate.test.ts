import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { createRateGate } from '../../service/rate/gate.ts';
import { createInProcessLimiter } from '../../service/rate/in-process.ts';
import type { RateDecision, RateLimiter } from '../../service/rate/port.ts';

/** A limiter that answers what the test says, recording who asked. */
function scripted(decision: RateDecision | Error) {
  const asked: string[] = [];
  const limiter: RateLimiter = {
    consume: async (keyId) => {
      asked.push(keyId);
      if (decision instanceof Error) throw decision;
      return decision;
    },
    ping: async () => true,
    close: async () => {},
  };
  return { limiter, asked };
}

const PROTECTIONS = ['basic', 'protected'] as const;

describe('rate gate', () => {
  for (const protection of PROTECTIONS) {
    it(`allows with the three RateLimit headers and the draft's RateLimit-Policy and RateLimit (${protection})`, async () => {
      const { limiter, asked } = scripted({ ok: true, limit: 60, remaining: 12, resetSeconds: 37 });
      assert.deepEqual(await createRateGate(limiter).check('kid_1', protection), {
        ok: true,
        headers: {
          'ratelimit-limit': '60',
          'ratelimit-remaining': '12',
          'ratelimit-reset': '37',
          'ratelimit-policy': '"requests";q=60;w=60',
          ratelimit: '"requests";r=12;t=37',
        },
      });
      assert.deepEqual(asked, ['kid_1']);
    });

    it(`refuses over the limit with 429 rate_limited, Retry-After and the headers (${protection})`, async () => {
      const { limiter } = scripted({
        ok: false,
        reason: 'limited',
        limit: 60,
        remaining: 0,
        resetSeconds: 14,
        retryAfterSeconds: 14,
      });
      assert.deepEqual(await createRateGate(limiter).check('kid_1', protection), {
        ok: false,
        error: {
          status: 429,
          code: 'rate_limited',
          message: 'Rate limit exceeded; retry after the Retry-After interval.',
          retryAfter: 14,
        },
        headers: {
          'ratelimit-limit': '60',
          'ratelimit-remaining': '0',
          'ratelimit-reset': '14',
          'ratelimit-policy': '"requests";q=60;w=60',
          ratelimit: '"requests";r=0;t=14',
          'retry-after': '14',
        },
      });
    });
  }

  it('lets basic reads through unlimited, without rate headers, when the limiter is unavailable', async () => {
    const { limiter } = scripted({ ok: false, reason: 'unavailable' });
    assert.deepEqual(await createRateGate(limiter).check('kid_1', 'basic'), { ok: true, headers: {} });
  });

  it('answers 503 with Retry-After 60 for protected operations when the limiter is unavailable', async () => {
    const { limiter } = scripted({ ok: false, reason: 'unavailable' });
    assert.deepEqual(await createRateGate(limiter).check('kid_1', 'protected'), {
      ok: false,
      error: {
        status: 503,
        code: 'unavailable',
        message: 'Rate protection is unavailable; wait 60 seconds and retry.',
        retryAfter: 60,
      },
      headers: { 'retry-after': '60' },
    });
  });

  it('treats a limiter that throws as unavailable instead of failing the request', async () => {
    const { limiter } = scripted(new Error('boom'));
    const gate = createRateGate(limiter);
    assert.deepEqual(await gate.check('kid_1', 'basic'), { ok: true, headers: {} });
    const refused = await gate.check('kid_1', 'protected');
    assert.equal(!refused.ok && refused.error.status, 503);
  });

  it('treats a limiter that throws before answering (not a rejection) as unavailable too, in every budget', async () => {
    const limiter: RateLimiter = {
      consume: () => {
        throw new Error('boom at once');
      },
      ping: async () => true,
      close: async () => {},
    };
    const gate = createRateGate(limiter);
    assert.deepEqual(await gate.check('kid_1', 'basic'), { ok: true, headers: {} });
    const refused = await gate.check('kid_1', 'protected');
    assert.equal(!refused.ok && refused.error.status, 503);
    assert.deepEqual(await gate.check('kid_1', 'basic', 'protocol'), { ok: true, headers: {} });
  });

  it('answers with the remaining budget from the in-process limiter', async () => {
    const gate = createRateGate(createInProcessLimiter({ limit: 3, now: () => 1_750_000_000_000 }));
    const checked = await gate.check('kid_1', 'basic');
    assert.ok(checked.ok);
    assert.equal(checked.headers['ratelimit-remaining'], '2');
  });

  it('counts basic and protected operations against one budget', async () => {
    const gate = createRateGate(createInProcessLimiter({ limit: 3, now: () => 1_750_000_000_000 }));
    assert.equal((await gate.check('kid_1', 'basic')).headers['ratelimit-remaining'], '2');
    assert.equal((await gate.check('kid_1', 'protected')).headers['ratelimit-remaining'], '1');
    assert.equal((await gate.check('kid_1', 'basic')).headers['ratelimit-remaining'], '0');
    const refused = await gate.check('kid_1', 'protected');
    assert.equal(!refused.ok && refused.error.code, 'rate_limited');
    assert.equal(refused.headers['retry-after'], '60');
  });

  it('counts protocol messages in a bucket of their own, with their own limit and no RateLimit headers', async () => {
    const limiter = createInProcessLimiter({ limit: 2, now: () => 1_750_000_000_000 });
    const gate = createRateGate(limiter, { protocolLimit: 3 });
    for (let i = 0; i < 3; i++)
      assert.deepEqual(await gate.check('kid_1', 'basic', 'protocol'), { ok: true, headers: {} });
    const refused = await gate.check('kid_1', 'basic', 'protocol');
    assert.equal(!refused.ok && refused.error.code, 'rate_limited');
    assert.deepEqual(refused.headers, { 'retry-after': '60' });
    // The requests budget of the same key is untouched, and spending it leaves the protocol one as it was.
    assert.equal((await gate.check('kid_1', 'basic')).headers['ratelimit-remaining'], '1');
    assert.equal((await gate.check('kid_1', 'basic')).headers['ratelimit-remaining'], '0');
    assert.equal((await gate.check('kid_1', 'basic')).ok, false);
    assert.equal((await gate.check('kid_2', 'basic', 'protocol')).ok, true);
  });

  it('lets protocol messages through when the limiter is unavailable or throws', async () => {
    for (const decision of [{ ok: false, reason: 'unavailable' } as const, new Error('boom')]) {
      const { limiter, asked } = scripted(decision);
      assert.deepEqual(await createRateGate(limiter, { protocolLimit: 5 }).check('kid_1', 'basic', 'protocol'), {
        ok: true,
        headers: {},
      });
      assert.deepEqual(asked, ['kid_1:protocol']);
    }
  });
});
