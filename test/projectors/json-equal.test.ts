/**
 * jsonEqual decides whether a fold changed a document (and so whether it gets a new seq): it must agree
 * with comparing the JSON texts, on seeded random pairs built to share, reorder and perturb values.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { jsonEqual } from '../../projectors/json-equal.ts';
import { prng } from '../support/seed.ts';

const SEED = Number(process.env['PULSEBOARD_TEST_SEED'] ?? 4242);

function generator(random: () => number) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const leaves: unknown[] = [
    null,
    0,
    -0,
    1,
    1.5,
    NaN,
    Infinity,
    -Infinity,
    '',
    'a',
    'b',
    true,
    false,
    undefined,
    () => 1,
    Symbol('s'),
    new Date(0),
  ];
  const value = (depth: number): unknown => {
    const r = random();
    if (depth > 3 || r < 0.5) return pick(leaves);
    if (r < 0.75) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    for (let i = Math.floor(random() * 5); i > 0; i--) o[pick(['a', 'b', 'c', '1', '0'])] = value(depth + 1);
    return o;
  };
  /** A variant of `v`: mostly the same references, sometimes a copy, a reordering or another value. */
  const variant = (v: unknown, depth: number): unknown => {
    const r = random();
    if (r < 0.3) return v;
    if (r < 0.4) return value(depth);
    if (typeof v !== 'object' || v === null) return r < 0.7 ? v : pick(leaves);
    if (Array.isArray(v)) return v.map((item) => variant(item, depth + 1));
    const entries = Object.entries(v).map(([k, item]) => [k, variant(item, depth + 1)] as const);
    if (r < 0.5) entries.reverse();
    return Object.fromEntries(entries);
  };
  return { value, variant };
}

describe('jsonEqual', () => {
  it(`agrees with JSON.stringify on seeded random pairs (seed ${SEED})`, () => {
    const random = prng(SEED);
    const { value, variant } = generator(random);
    let equal = 0;
    let unequal = 0;
    for (let n = 0; n < 20_000; n++) {
      const a = value(0);
      const b = variant(a, 0);
      const expected = JSON.stringify(a) === JSON.stringify(b);
      assert.equal(jsonEqual(a, b), expected, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      if (expected) equal += 1;
      else unequal += 1;
    }
    // Both outcomes are exercised, many times.
    assert.ok(equal > 2000 && unequal > 2000, `${equal} equal, ${unequal} unequal`);
  });

  it('treats key order, omitted values and non-finite numbers as JSON does', () => {
    assert.equal(jsonEqual({ a: 1, b: 2 }, { b: 2, a: 1 }), false);
    assert.equal(jsonEqual({ a: 1, b: undefined }, { a: 1 }), true);
    assert.equal(jsonEqual([undefined], [null]), true);
    assert.equal(jsonEqual({ n: NaN }, { n: null }), true);
    assert.equal(jsonEqual({ n: -0 }, { n: 0 }), true);
    assert.equal(jsonEqual({ d: new Date(0) }, { d: '1970-01-01T00:00:00.000Z' }), true);
    assert.equal(jsonEqual({ s: '1' }, { s: 1 }), false);
  });
});
