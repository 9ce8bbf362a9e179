/** Source event ids are stored: the direct v5 computation must give exactly the uuid package's v5 text. */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { v5 } from 'uuid';
import { EVENT_ID_NAMESPACE, sourceEventId } from '../../events/ids.ts';

describe('sourceEventId', () => {
  it('equals uuid v5 of "type\\0id" in the fixed namespace, for ASCII, non-ASCII, empty and long ids', () => {
    const ids = ['a', '', 'é ü 漢字 😀', 'x'.repeat(300), 'call-123', '\u0000\uffff'];
    for (let i = 0; i < 2000; i++)
      ids.push(String.fromCharCode(...Array.from({ length: i % 40 }, (_, j) => (i * 7919 + j * 104729) % 0xd7ff)));
    for (const id of ids) {
      for (const type of ['project.sighted', 'call.recorded'])
        assert.equal(sourceEventId(type, id), v5(`${type}\u0000${id}`, EVENT_ID_NAMESPACE));
    }
    assert.match(
      sourceEventId('project.sighted', 'sight-1'),
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});
