/**
 * differingMembers names a diff row's fields from the stored texts: it must name exactly what
 * differingFields names from the parsed documents, on seeded random pairs of JSON.stringify texts
 * whose keys and strings hold quotes, escapes, brackets and characters past ASCII.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { differingFields, differingMembers } from '../../service/differing-fields.ts';
import { prng } from '../support/seed.ts';

const SEED = Number(process.env['PULSEBOARD_TEST_SEED'] ?? 4343);

const utf8 = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');
const byParsing = (before: object | null, after: object) =>
  differingFields(
    before === null ? null : (JSON.parse(JSON.stringify(before)) as never),
    JSON.parse(JSON.stringify(after)) as never,
  );

function generator(random: () => number) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const texts = [
    '',
    'a',
    'say "hi"',
    'back\\slash',
    '{[,:]}',
    'ünïcode 🚀',
    'tab\tnew\nline',
    '\u0000',
    '\ud800',
    '\\"',
  ];
  const keys = ['id', 'name', 'fol', '1', '0', 'with"quote', 'back\\slash', 'ünï', '{', ',', ''];
  const leaves: unknown[] = [null, 0, -1, 1.5, 1e21, true, false, ...texts];
  const value = (depth: number): unknown => {
    const r = random();
    if (depth > 3 || r < 0.5) return pick(leaves);
    if (r < 0.75) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    for (let i = Math.floor(random() * 4); i > 0; i--) o[pick(keys)] = value(depth + 1);
    return o;
  };
  const doc = (): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    for (let i = Math.floor(random() * 8); i > 0; i--) o[pick(keys)] = value(1);
    return o;
  };
  /** A variant of `d`: some members kept, changed, dropped or added, sometimes in another order. */
  const variant = (d: Record<string, unknown>): Record<string, unknown> => {
    const entries = Object.entries(d)
      .filter(() => random() > 0.1)
      .map(([k, v]) => [k, random() < 0.7 ? v : value(1)] as const);
    if (random() < 0.2) entries.reverse();
    const out = Object.fromEntries(entries);
    if (random() < 0.2) out[pick(keys)] = value(1);
    return out;
  };
  return { doc, variant };
}

describe('differingMembers', () => {
  it(`names what differingFields names from the parsed documents (seed ${SEED})`, () => {
    const random = prng(SEED);
    const { doc, variant } = generator(random);
    let named = 0;
    let none = 0;
    for (let n = 0; n < 10_000; n++) {
      const before = random() < 0.1 ? null : doc();
      const after = before === null ? doc() : variant(before);
      const expected = byParsing(before, after);
      const given = differingMembers(before === null ? null : utf8(before), utf8(after));
      assert.deepEqual(given, expected, `${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
      if (expected.length > 0) named += 1;
      else if (before !== null) none += 1;
    }
    // Rows with changed fields and rows with none are both exercised, many times.
    assert.ok(named > 1000 && none > 1000, `${named} with fields, ${none} without`);
  });

  it('names every member of a document that was not there before, and none of an empty one', () => {
    assert.deepEqual(differingMembers(null, utf8({ id: 'p', 'a"b': 1, ü: [] })), ['id', 'a"b', 'ü']);
    assert.deepEqual(differingMembers(utf8({ a: 1 }), utf8({})), []);
    assert.deepEqual(differingMembers(utf8({ a: { b: '}' } }), utf8({ a: { b: '}' }, c: 0 })), ['c']);
  });

  it('declines a text JSON.stringify would not have written, so the caller parses it', () => {
    assert.equal(differingMembers(null, Buffer.from('{ "a": 1 }')), null);
    assert.equal(differingMembers(Buffer.from('[1]'), utf8({ a: 1 })), null);
    assert.equal(differingMembers(utf8({ a: 1 }), Buffer.from('{"a":"unterminated}')), null);
    assert.equal(differingMembers(utf8({ a: 1 }), Buffer.from('{"a":1}}')), null);
  });
});
