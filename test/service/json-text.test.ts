import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { containerEnd, membersOf, stringEnd, topLevelStringMember, type JsonText } from '../../service/json-text.ts';

/** The same text as a string and as its UTF-8 bytes (ASCII here, so offsets agree). */
const both = (text: string): JsonText[] => [text, Buffer.from(text, 'utf8')];

describe('JSON text scanning', () => {
  it('finds the quote closing a string, past escaped quotes and escaped backslashes', () => {
    for (const text of both('"a\\"b\\\\"x')) assert.equal(stringEnd(text, 0), 7);
    for (const text of both('"\\\\\\""')) assert.equal(stringEnd(text, 0), 5);
    for (const text of both('"unterminated\\"')) assert.equal(stringEnd(text, 0), -1);
  });

  it('finds the end of an object or array, strings skipped', () => {
    for (const text of both('{"a":[1,"]}",{"b":"{"}]}rest')) assert.equal(containerEnd(text, 0), 24);
    for (const text of both('[1,[2]')) assert.equal(containerEnd(text, 0), -1);
    for (const text of both('["]')) assert.equal(containerEnd(text, 0), -1);
  });

  it('lists the members of an object text as JSON.stringify writes it, and nothing else', () => {
    const text = JSON.stringify({ a: 1, 'b"c': { d: ']' }, e: [] });
    for (const t of both(text)) {
      const members = membersOf(t)!;
      const slices = [];
      for (let k = 0; k < members.length; k += 4)
        slices.push([text.slice(members[k], members[k + 1]), text.slice(members[k + 2], members[k + 3])]);
      assert.deepEqual(slices, [
        ['"a"', '1'],
        ['"b\\"c"', '{"d":"]"}'],
        ['"e"', '[]'],
      ]);
    }
    for (const t of ['{ "a": 1 }', '[1]', '{"a":"x}', '{"a":1}}', '{"a"}', '{"a":}'])
      assert.equal(membersOf(t), null, t);
    assert.deepEqual(membersOf('{}'), []);
  });

  it('finds a top-level string member, never a nested one of the same name', () => {
    const json = JSON.stringify({
      dossier: { readAt: 'nested' },
      note: '"readAt":"x"',
      readAt: '2026-11-20T08:00:00Z',
    });
    const at = topLevelStringMember(json, 'readAt')!;
    assert.equal(json.slice(at.start, at.end), '2026-11-20T08:00:00Z');
    assert.equal(topLevelStringMember(JSON.stringify({ dossier: { readAt: 'nested' } }), 'readAt'), null);
    assert.equal(topLevelStringMember('{"a":"unterminated,"readAt":"x"', 'readAt'), null);
  });
});
