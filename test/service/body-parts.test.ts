/** Bodies split around readAt: the same bytes as the JSON text, and the validator the text gives. */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import { etagOf } from '../../api/http/caching.ts';
import type { StoredDoc } from '../../readmodels/port.ts';
import { bodyWith, fromParts, joinedBytes, plain, rendered, storedDoc, storedDocs } from '../../service/spliced.ts';

const stored = (doc: unknown): StoredDoc => ({ id: 'x', doc, json: JSON.stringify(doc), utf8: Buffer.from(JSON.stringify(doc)), state: null, seq: 1, writtenAt: '', sortKey: '', facet: '', keys: {} });

it('head + readAt + tail is the JSON text, for readAt first, in the middle, last or absent; the ETag is the text\'s', () => {
  const docs = [stored({ id: 'é"\\\u2028', readAt: 'nested, kept', n: [1, { b: null }] }), stored({ lone: '\ud800', emoji: '🦊' })];
  const readAt = '2026-11-22T20:00:00.000Z';
  const shapes = [
    rendered<{ readAt: string; items: unknown[]; n: number }, 'items'>({ readAt, items: storedDocs(docs), n: 1 }),
    rendered<{ items: unknown[]; readAt: string; none?: string; one: unknown }, 'items' | 'one'>({ items: storedDocs(docs), readAt, none: undefined, one: storedDoc(docs[0]!) }),
    rendered<{ items: unknown[]; empty: unknown[]; readAt: string }, 'items' | 'empty'>({ items: storedDocs(docs), empty: storedDocs([]), readAt }),
    rendered<{ one: unknown; nothing: null }, 'one' | 'nothing'>({ one: storedDoc(docs[1]!), nothing: plain(null) }),
  ];
  for (const shape of shapes) {
    const split = shape.parts();
    assert.ok(split);
    const body = bodyWith(split.parts, split.readAt);
    assert.equal(body.toString('utf8'), shape.json());
    assert.deepEqual(body, Buffer.from(shape.json()));
    assert.equal(split.parts.etag, etagOf(shape.json()));
    // The read that made the body sends it as it was made (one buffer, head and tail views of it), not a copy.
    if (split.parts.tail !== null) assert.equal(bodyWith(split.parts, split.readAt), split.parts.first?.body);
    // Served again with another read time: only readAt differs, the validator stays.
    const again = fromParts<unknown>(split.parts, '2026-11-22T21:00:00.000Z');
    const expected = split.parts.tail === null ? shape.json() : shape.json().replace(`"readAt":"${readAt}"`, '"readAt":"2026-11-22T21:00:00.000Z"');
    assert.equal(again.json(), expected);
    assert.deepEqual(again.value(), JSON.parse(expected));
  }
});

it('joinedBytes writes the pieces with the separator between and the end after, exactly as concatenating them would', () => {
  const reference = (pieces: Buffer[], between: string, end: string) =>
    Buffer.concat([...pieces.flatMap((piece, i) => (i === 0 ? [piece] : [Buffer.from(between), piece])), Buffer.from(end)]);
  const cases: [Buffer[], string, string][] = [
    [[Buffer.from('{"a":"'), Buffer.from('","b":"é🦊"}')], '2026-11-22T20:00:00.000Z', ''],
    [[Buffer.from('x'), Buffer.from(''), Buffer.from('ü')], 'ß\u2028', '"id"}'],
    [[Buffer.from('{"result":'), Buffer.from('}')], '', '7}'],
    [[Buffer.from('only')], 'never written', '🦊'],
    [[], 'never written', 'end alone'],
  ];
  for (const [pieces, between, end] of cases) {
    const joined = joinedBytes(pieces, between, end);
    assert.deepEqual(joined, reference(pieces, between, end));
  }
});
