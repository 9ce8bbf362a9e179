/**
 * A commit's large text columns (documents, their states and keys, history versions and shared texts)
 * sent as one parameter each: the texts joined by U+0001, split again by `string_to_array` on the
 * server. pg sends a text[] parameter by escaping every element in JavaScript (two regex passes and a
 * copy of each): at a catch-up's 50,000 documents a commit that took seconds of the event loop, more than
 * the server's whole write. A join is one native copy. Every text here is JSON (or a part of one), which
 * holds no control character unescaped: U+0001 never occurs in one.
 */

const SEPARATOR = '\u0001';

/** `texts` as one parameter for `splitTexts`; a text with U+0001, or an empty one, cannot travel joined. */
export function joinTexts(texts: readonly string[]): string {
  for (const text of texts) {
    if (text.length === 0 || text.includes(SEPARATOR))
      throw new TypeError('a joined text must be non-empty JSON text without U+0001');
  }
  return texts.join(SEPARATOR);
}

/** SQL: the text[] that parameter `param` (a `joinTexts` result) holds, in order ('' is no text). */
export const splitTexts = (param: string): string => `string_to_array(${param}::text, chr(1))`;
