import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { heapFull } from '../../projectors/runner.ts';

describe('the runner heap guard', () => {
  it('ends the batch once the used heap passes the guard, and only then', () => {
    assert.equal(
      heapFull(1000, () => 900),
      false,
    );
    assert.equal(
      heapFull(1000, () => 1000),
      false,
      'exactly the guard is room enough',
    );
    assert.equal(
      heapFull(1000, () => 1001),
      true,
    );
  });
});
