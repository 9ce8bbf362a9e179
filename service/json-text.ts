/**
 * Scanning JSON texts as JSON.stringify writes them (no white space), as a string or as its UTF-8
 * bytes, without parsing them: reads that need one member of a large stored text (an ETag's `readAt`,
 * a call's tokens, a diff row's fields) find it here instead of parsing the whole text.
 */
export type JsonText = string | Uint8Array;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function codeAt(text: JsonText, i: number): number | undefined {
  return typeof text === 'string' ? (i < text.length ? text.charCodeAt(i) : undefined) : text[i];
}

function nextQuote(text: JsonText, from: number): number {
  return typeof text === 'string' ? text.indexOf('"', from) : text.indexOf(QUOTE, from);
}

/** Index of the quote closing the string whose opening quote is at `open`, or -1 when it is not closed. */
export function stringEnd(text: JsonText, open: number): number {
  // Strings are skipped natively (indexOf), looking back only at the backslashes before a quote.
  let at = nextQuote(text, open + 1);
  while (at > 0) {
    let backslashes = 0;
    while (codeAt(text, at - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return at;
    at = nextQuote(text, at + 1);
  }
  return -1;
}

/** Index just past the object or array that opens at `at`, or -1 when it is not closed. */
export function containerEnd(text: JsonText, at: number): number {
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = codeAt(text, i);
    if (c === QUOTE) {
      i = stringEnd(text, i);
      if (i < 0) return -1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth += 1;
    else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * The members of an object text, four offsets each: key start (its quote), key end (past its closing
 * quote), value start, value end. Null when the text is not an object as JSON.stringify writes it.
 */
export function membersOf(text: JsonText): number[] | null {
  const end = text.length - 1;
  if (codeAt(text, 0) !== OPEN_BRACE || codeAt(text, end) !== CLOSE_BRACE) return null;
  const members: number[] = [];
  let i = 1;
  while (i < end) {
    if (codeAt(text, i) !== QUOTE) return null;
    const keyClose = stringEnd(text, i);
    const keyEnd = keyClose + 1;
    if (keyClose < 0 || codeAt(text, keyEnd) !== COLON) return null;
    let v = keyEnd + 1;
    let depth = 0;
    for (;;) {
      const c = codeAt(text, v);
      if (c === QUOTE) {
        const close = stringEnd(text, v);
        if (close < 0) return null;
        v = close + 1;
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
    if (v === keyEnd + 1 || (codeAt(text, v) === CLOSE_BRACE && v !== end)) return null;
    members.push(i, keyEnd, keyEnd + 1, v);
    i = v + 1;
  }
  return members;
}

/**
 * Where the value of the top-level string member `name` is (between its quotes), or null when the
 * object has none. Members of the same name nested deeper are data, and are passed over.
 */
export function topLevelStringMember(json: string, name: string): { start: number; end: number } | null {
  const member = `"${name}":"`;
  if (!json.includes(member)) return null;
  let depth = 0;
  let i = 0;
  while (i < json.length) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      if (depth === 1 && json.startsWith(member, i) && (json[i - 1] === '{' || json[i - 1] === ',')) {
        const start = i + member.length;
        const end = stringEnd(json, start - 1);
        return end < 0 ? null : { start, end };
      }
      const close = stringEnd(json, i);
      if (close < 0) return null;
      i = close + 1;
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth += 1;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth -= 1;
    i += 1;
  }
  return null;
}
