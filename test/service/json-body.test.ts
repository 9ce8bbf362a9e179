/** Bodies made as JSON bytes around readAt: the bytes JSON.stringify of the value gives, and the text's validator. */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import { etagOf } from '../../api/http/caching.ts';
import type { StoredDoc } from '../../readmodels/port.ts';
import { bytesOf, jsonBody, storedJson, storedJsonList, withReadAt } from '../../service/json-body.ts';

const stored = (doc: unknown): StoredDoc => {
  const json = JSON.stringify(doc);
  return {
    id: 'x',
    doc,
    json,
    utf8: Buffer.from(json),
    state: null,
    seq: 1,
    writtenAt: '',
    sortKey: '',
    facet: '',
    keys: {},
  };
};

it("head + readAt + tail is the JSON text, for readAt first, in the middle, last or absent; the ETag is the text's", () => {
  const docs = [
    stored({ id: 'é"\\\u2028', readAt: 'nested, kept', n: [1, { b: null }] }),
    stored({ lone: '\ud800', emoji: '🦊' }),
  ];
  const readAt = '2026-11-22T20:00:00.000Z';
  const bodies = [
    jsonBody<{ readAt: string; items: unknown[]; n: number }, 'items'>({ readAt, items: storedJsonList(docs), n: 1 }),
    jsonBody<{ items: unknown[]; readAt: string; none?: string; one: unknown }, 'items' | 'one'>({
      items: storedJsonList(docs),
      readAt,
      none: undefined,
      one: storedJson(docs[0]!),
    }),
    jsonBody<{ items: unknown[]; empty: unknown[]; readAt: string }, 'items' | 'empty'>({
      items: storedJsonList(docs),
      empty: storedJsonList([]),
      readAt,
    }),
    jsonBody<{ one: unknown; nothing: null }, 'one'>({ one: storedJson(docs[1]!), nothing: null }),
  ];
  for (const body of bodies) {
    const text = JSON.stringify(body.value());
    assert.equal(bytesOf(body).toString('utf8'), text);
    assert.deepEqual(bytesOf(body), Buffer.from(text));
    assert.equal(body.etag, etagOf(text));
    // Served again with another read time: only readAt differs, the validator stays.
    const again = withReadAt<unknown>(body, '2026-11-22T21:00:00.000Z');
    const expected =
      body.tail === null ? text : text.replace(`"readAt":"${readAt}"`, '"readAt":"2026-11-22T21:00:00.000Z"');
    assert.equal(bytesOf(again).toString('utf8'), expected);
    assert.deepEqual(again.value(), JSON.parse(expected));
    assert.equal(again.etag, body.etag);
  }
});

it('stored documents are written as stored, never parsed for the bytes; an undefined member is left out', () => {
  let parsed = 0;
  const row = stored({ kept: 'as stored' });
  const counting = {
    ...row,
    get doc() {
      parsed += 1;
      return row.doc;
    },
  } as StoredDoc;
  const body = jsonBody<{ one: unknown; note?: string }, 'one'>({ one: storedJson(counting), note: undefined });
  assert.equal(bytesOf(body).toString('utf8'), '{"one":{"kept":"as stored"}}');
  assert.equal(parsed, 0);
  assert.equal(
    bytesOf(jsonBody<{ items: unknown[] }, 'items'>({ items: storedJsonList([]) })).toString('utf8'),
    '{"items":[]}',
  );
});
