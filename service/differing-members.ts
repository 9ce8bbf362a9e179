/**
 * The top-level members in which two stored JSON object texts differ, found on their UTF-8 bytes.
 * By hand instead of JSON.parse of both: parsing them was most of a diff page's server time.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The index just past the string whose opening quote is at `at`. */
function stringEnd(text: Uint8Array, at: number): number {
  let i = at + 1;
  for (;;) {
    const c = text[i];
    if (c === QUOTE) return i + 1;
    if (c === undefined) return -1;
    i += c === BACKSLASH ? 2 : 1;
  }
}

/**
 * The members of an object text as JSON.stringify writes it (no white space), four offsets each:
 * key start (its quote), key end, value start, value end. Null when the text is not such an object.
 */
function membersOf(text: Uint8Array): number[] | null {
  const end = text.length - 1;
  if (text[0] !== OPEN_BRACE || text[end] !== CLOSE_BRACE) return null;
  const members: number[] = [];
  let i = 1;
  while (i < end) {
    if (text[i] !== QUOTE) return null;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0 || text[keyEnd] !== COLON) return null;
    let v = keyEnd + 1;
    let depth = 0;
    for (;;) {
      const c = text[v];
      if (c === QUOTE) {
        v = stringEnd(text, v);
        if (v < 0) return null;
        continue;
      }
      if (c === undefined) return null;
      if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (depth === 0) break;
        depth--;
      } else if (c === COMMA && depth === 0) break;
      v++;
    }
    if (v === keyEnd + 1 || (text[v] === CLOSE_BRACE && v !== end)) return null;
    members.push(i, keyEnd, keyEnd + 1, v);
    i = v + 1;
  }
  return members;
}

function sameBytes(a: Uint8Array, aFrom: number, aTo: number, b: Uint8Array, bFrom: number, bTo: number): boolean {
  if (aTo - aFrom !== bTo - bFrom) return false;
  for (let i = 0; i < aTo - aFrom; i++) if (a[aFrom + i] !== b[bFrom + i]) return false;
  return true;
}

function keyName(text: Uint8Array, from: number, to: number): string {
  let name = '';
  for (let i = from + 1; i < to - 1; i++) {
    const c = text[i]!;
    // An escape or a character past ASCII: the key as JSON reads it.
    if (c === BACKSLASH || c > 0x7f) return JSON.parse(utf8.decode(text.subarray(from, to))) as string;
    name += String.fromCharCode(c);
  }
  return name;
}

/**
 * The names of `after`'s top-level members whose value text differs from `before`'s member of the
 * same name (missing there too), in `after`'s order; every name when `before` is null. For texts
 * JSON.stringify wrote, this is what comparing the JSON texts of the parsed values says. Null when
 * either is not an object text as JSON.stringify writes it.
 */
export function differingMembers(before: Uint8Array | null, after: Uint8Array): string[] | null {
  const a = membersOf(after);
  if (a === null) return null;
  const names: string[] = [];
  if (before === null) {
    for (let k = 0; k < a.length; k += 4) names.push(keyName(after, a[k]!, a[k + 1]!));
    return names;
  }
  const b = membersOf(before);
  if (b === null) return null;
  for (let k = 0; k < a.length; k += 4) {
    // Both usually list their members in the same order: the search starts at the same place.
    let found = -1;
    for (let j = 0; j < b.length; j += 4) {
      const at = (k + j) % b.length;
      if (sameBytes(after, a[k]!, a[k + 1]!, before, b[at]!, b[at + 1]!)) {
        found = at;
        break;
      }
    }
    if (found < 0 || !sameBytes(after, a[k + 2]!, a[k + 3]!, before, b[found + 2]!, b[found + 3]!))
      names.push(keyName(after, a[k]!, a[k + 1]!));
  }
  return names;
}
