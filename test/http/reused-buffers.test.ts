/** Joined bodies in reused buffers: each holds its own bytes until its response closes, then is reused. */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { it } from 'vitest';
import { joinedBody } from '../../transport/reused-buffers.ts';

it('bodies in flight keep their bytes; a closed response gives its buffer to the next body', () => {
  const head = Buffer.from(`{"a":"${'x'.repeat(40_000)}","readAt":"`);
  const tail = Buffer.from(`","b":"é🦊"}`);
  const response = () => new EventEmitter() as unknown as ServerResponse;
  const first = response();
  const second = response();
  const one = joinedBody(first, head, '2026-11-22T20:00:00.000Z', tail);
  const two = joinedBody(second, head, '2026-11-22T21:00:00.000Z', tail);
  assert.notEqual(one.buffer, two.buffer, 'two bodies in flight never share memory');
  assert.equal(one.toString(), `${head.toString()}2026-11-22T20:00:00.000Z${tail.toString()}`);
  assert.equal(two.toString(), `${head.toString()}2026-11-22T21:00:00.000Z${tail.toString()}`);
  first.emit('close');
  const three = joinedBody(response(), head, '2026-11-22T22:00:00.000Z', tail);
  assert.equal(three.buffer, one.buffer, 'the closed response gave its buffer back');
  assert.equal(
    two.toString(),
    `${head.toString()}2026-11-22T21:00:00.000Z${tail.toString()}`,
    'the open one is untouched',
  );
  const small = joinedBody(response(), Buffer.from('{"readAt":"'), 'x', Buffer.from('"}'));
  assert.equal(small.toString(), '{"readAt":"x"}');
});
