import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serializedToolSuccess, toolFailure, toolSuccess } from '../../mcp/results.ts';
import { errors } from '../../service/errors.ts';

describe('tool results', () => {
  it('a success serialized once is byte for byte the result serialized whole', () => {
    const bodies = [{}, { a: 1 }, { text: 'quote " backslash \\ newline \n control \u0001 emoji 🚀 价格', nested: { list: [null, true, 1.5] } }];
    for (const body of bodies) assert.equal(serializedToolSuccess(body), JSON.stringify(toolSuccess(body)));
  });

  it('a failure with a wait says it in the message and in _meta.retryAfterSeconds; one without has no _meta', () => {
    const limited = toolFailure(errors.rateLimited(41.2));
    assert.deepEqual(limited._meta, { retryAfterSeconds: 42 });
    assert.equal((limited.structuredContent as any).error.message, 'Rate limit exceeded; retry after the Retry-After interval. Wait 42 seconds before calling again.');
    const down = toolFailure(errors.rateProtectionDown());
    assert.deepEqual(down._meta, { retryAfterSeconds: 60 });
    assert.equal((down.structuredContent as any).error.message, 'Rate protection is unavailable; wait 60 seconds and retry.');
    assert.equal('_meta' in toolFailure(errors.notFound('no such thing')), false);
  });
});
