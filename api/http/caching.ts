import { createHash } from 'node:crypto';

/**
 * Cache-Control of a successful /v1 read. Call records and the thesis feed are `private, no-store`
 * (the spec says so); every other read may be kept by the caller's own cache but must be
 * revalidated with its ETag before each use. Errors are never cached (`private, no-store`).
 */
export const CACHE_NO_STORE = 'private, no-store';
export const CACHE_REVALIDATE = 'private, max-age=0, must-revalidate';

/**
 * A weak validator of a JSON read: weak because the top-level `readAt` (the time of this read,
 * different on every request) is left out, so the same data read again matches, and because one
 * tag serves every content encoding.
 */
export function etagOf(json: string): string {
  const readAt = topLevelReadAt(json);
  const hash = createHash('sha1');
  if (readAt) hash.update(json.slice(0, readAt.start)).update(json.slice(readAt.end));
  else hash.update(json);
  return `W/"${hash.digest('base64url')}"`;
}

const READ_AT_MEMBER = '"readAt":"';

/**
 * Where the value of the top-level `readAt` member is, if any. Nested `readAt` members (a
 * dossier's freshness) are data and stay in the hash. One pass over structure, skipping strings
 * natively: JSON text made by JSON.stringify (no whitespace).
 */
export function topLevelReadAt(json: string): { start: number; end: number } | null {
  if (!json.includes(READ_AT_MEMBER)) return null;
  let depth = 0;
  let i = 0;
  while (i < json.length) {
    const c = json.charCodeAt(i);
    if (c === 0x22 /* " */) {
      if (depth === 1 && json.startsWith(READ_AT_MEMBER, i) && (json[i - 1] === '{' || json[i - 1] === ',')) {
        const start = i + READ_AT_MEMBER.length;
        const end = json.indexOf('"', start);
        return end < 0 ? null : { start, end };
      }
      i = stringEnd(json, i) + 1;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) depth += 1;
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth -= 1;
    i += 1;
  }
  return null;
}

/** Index of the quote closing the string opened at `open`. */
function stringEnd(json: string, open: number): number {
  let at = json.indexOf('"', open + 1);
  while (at > 0) {
    let backslashes = 0;
    while (json.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return at;
    at = json.indexOf('"', at + 1);
  }
  return json.length;
}

/** RFC 9110 §13.1.2: weak comparison against any of the listed tags, or `*`. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const wanted = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const raw of header.split(',')) {
    const tag = raw.trim();
    if (tag === '*') return true;
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === wanted) return true;
  }
  return false;
}
