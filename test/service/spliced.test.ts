/** Spliced responses: the JSON text is what serialising the value gives, stored texts left untouched. */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import type { StoredDoc } from '../../readmodels/port.ts';
import { plain, rendered, spliced, storedDoc, storedDocs } from '../../service/spliced.ts';

const stored = (doc: unknown): StoredDoc => ({ id: 'x', doc, json: JSON.stringify(doc), utf8: Buffer.from(JSON.stringify(doc)), state: null, seq: 1, writtenAt: '', sortKey: '', facet: '', keys: {} });

it('text and value agree for every kind of field, and stored texts are never parsed for the text', () => {
  type Page = { items: unknown[]; one: unknown; none: unknown; count: number; note?: string; nested: { a: string } };
  const docs = [stored({ id: 'é"\\\u2028', n: [1, { b: null }] }), stored({ lone: '\ud800', emoji: '🦊' })];
  let parsed = 0;
  const untouchable = spliced<unknown>('{"kept":"as stored"}', () => {
    parsed += 1;
    return { kept: 'as stored' };
  });
  const page = rendered<Page, 'items' | 'one' | 'none'>({
    items: storedDocs(docs),
    one: untouchable,
    none: plain(null),
    count: 2,
    note: undefined,
    nested: { a: 'x' },
  });
  const text = page.json();
  assert.equal(parsed, 0, 'the text is made without the value');
  assert.equal(text, JSON.stringify(page.value()));
  assert.ok(!('note' in JSON.parse(text)), 'an undefined field is left out, as JSON.stringify does');
  assert.equal(storedDoc(docs[1]!).json(), docs[1]!.json);
  assert.deepEqual(rendered<{ items: unknown[] }, 'items'>({ items: storedDocs([]) }).json(), '{"items":[]}');
});
