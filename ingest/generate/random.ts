/**
 * Deterministic randomness for the generator. Every draw comes from a generator seeded by a hash
 * of (seed, topic, indices), so any part of the data set can be recomputed on demand instead of
 * being remembered: memory stays flat however many messages are written. Integer arithmetic
 * only, so the output is the same on every machine.
 */

export type Random = {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max] (inclusive). */
  int(min: number, max: number): number;
  chance(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** `length` lower-case hex digits. */
  hex(length: number): string;
  /** `length` characters of the base58 alphabet. */
  base58(length: number): string;
};

/** xmur3: a 32-bit string hash, used only to seed sfc32. */
function xmur3(text: string): () => number {
  let h = 1779033703 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 3432918353);
    h = (h << 13) | (h >>> 19);
  }
  return () => {
    h = Math.imul(h ^ (h >>> 16), 2246822507);
    h = Math.imul(h ^ (h >>> 13), 3266489909);
    h ^= h >>> 16;
    return h >>> 0;
  };
}

/** sfc32: small, fast, good enough for synthetic data. */
function sfc32(a: number, b: number, c: number, d: number): () => number {
  return () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return t >>> 0;
  };
}

const HEX = '0123456789abcdef';
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function randomFor(seed: number, ...parts: (string | number)[]): Random {
  const hash = xmur3(`${seed}|${parts.join('|')}`);
  const word = sfc32(hash(), hash(), hash(), hash());
  for (let i = 0; i < 8; i++) word();
  const next = () => word() / 4294967296;
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const from = (alphabet: string, length: number) => {
    let out = '';
    for (let i = 0; i < length; i++) out += alphabet[word() % alphabet.length];
    return out;
  };
  return {
    next,
    int,
    chance: (probability) => next() < probability,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[int(0, items.length - 1)]!;
    },
    hex: (length) => from(HEX, length),
    base58: (length) => from(BASE58, length),
  };
}
