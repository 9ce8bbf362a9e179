import { createHash } from 'node:crypto';
import { topLevelStringMember } from '../../service/json-text.ts';

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
  // Nested `readAt` members (a dossier's freshness) are data and stay in the hash.
  const readAt = topLevelStringMember(json, 'readAt');
  const hash = createHash('sha1');
  if (readAt) hash.update(json.slice(0, readAt.start)).update(json.slice(readAt.end));
  else hash.update(json);
  return `W/"${hash.digest('base64url')}"`;
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
