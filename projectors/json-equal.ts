/**
 * True exactly when `JSON.stringify(a) === JSON.stringify(b)`, without building either text: a fold
 * is copy-on-write, so a document and its successor share every value the event left alone, and the
 * walk stops at the first shared reference. Key order counts (it is part of the JSON text); keys whose
 * value JSON omits (undefined, functions, symbols) are skipped as JSON.stringify skips them, and
 * non-finite numbers equal null as they serialise to it. A value with a `toJSON` method, or a bigint,
 * is compared through JSON.stringify itself.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return primitiveEqual(a, b);
  if (hasToJson(a) || hasToJson(b)) return JSON.stringify(a) === JSON.stringify(b);
  const arrayA = Array.isArray(a);
  if (arrayA !== Array.isArray(b)) return false;
  if (arrayA) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) {
      // In an array, a value JSON omits is written as null.
      if (!jsonEqual(omitted(x[i]) ? null : x[i], omitted(y[i]) ? null : y[i])) return false;
    }
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keysX = Object.keys(x);
  const keysY = Object.keys(y);
  let i = 0;
  let j = 0;
  for (;;) {
    while (i < keysX.length && omitted(x[keysX[i]!])) i++;
    while (j < keysY.length && omitted(y[keysY[j]!])) j++;
    if (i === keysX.length || j === keysY.length) return i === keysX.length && j === keysY.length;
    const key = keysX[i]!;
    if (key !== keysY[j] || !jsonEqual(x[key], y[key])) return false;
    i++;
    j++;
  }
}

/** A value JSON.stringify leaves out of an object (and writes as null in an array). */
function omitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

function hasToJson(value: object): boolean {
  return typeof (value as { toJSON?: unknown }).toJSON === 'function';
}

/** `a !== b` here: two primitives (or one object and one primitive) serialise alike only in JSON's corner cases. */
function primitiveEqual(a: unknown, b: unknown): boolean {
  if (omitted(a) || omitted(b)) return omitted(a) && omitted(b);
  if (typeof a === 'object' && a !== null) return hasToJson(a) && JSON.stringify(a) === JSON.stringify(b);
  if (typeof b === 'object' && b !== null) return hasToJson(b) && JSON.stringify(a) === JSON.stringify(b);
  if (typeof a === 'string' || typeof b === 'string') return false;
  if (typeof a === 'bigint' || typeof b === 'bigint') return false;
  // Numbers, booleans, null, undefined: NaN and ±Infinity serialise as null, -0 as 0.
  const norm = (v: unknown) => (typeof v === 'number' ? (Number.isFinite(v) ? v : null) : v);
  return norm(a) === norm(b);
}
