/**
 * The test broker's cluster id never starts with '-': the format tool would take it for a flag and fail
 * (a rare failure of the real-broker tests, one id in 64).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { kafkaClusterId } from '../support/kafka-broker.ts';

describe('kafkaClusterId', () => {
  it("draws again when the id would start with '-', and keeps a 22-character URL-safe id", () => {
    // 0xf8 makes the first six bits 62, which base64url writes as '-'.
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x41)];
    assert.equal(draws[0]!.toString('base64url')[0], '-');
    const id = kafkaClusterId(() => draws.shift()!);
    assert.equal(draws.length, 0, 'a second draw was taken');
    assert.equal(id, Buffer.alloc(16, 0x41).toString('base64url'));
    assert.match(id, /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
  });
});
