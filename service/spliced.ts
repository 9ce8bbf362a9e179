import { createHash } from 'node:crypto';
import type { StoredDoc } from '../readmodels/port.ts';
import { ok, type Result } from './errors.ts';

/**
 * Responses are built once, as fields some of which are JSON texts already made (a stored document's
 * `json`, a call measured for the page budget). The REST transport sends the text with those texts
 * spliced in, never parsed nor serialised again; the tool surface gets the same fields as values.
 * Both renderings come from one field list, so the bytes agree by construction (JSON.stringify of
 * the values gives the text).
 */
const SPLICED = Symbol('spliced');

export type Spliced<T> = {
  readonly [SPLICED]: true;
  json(): string;
  value(): T;
  /** The text as pieces whose concatenation is `json()` (written to bytes without joining them first). */
  pieces?(): readonly string[];
};

/** A value whose JSON text is known (or made on first use), the value itself made only when asked for. */
export function spliced<T>(json: string | (() => string), value: () => T): Spliced<T> {
  let text = typeof json === 'string' ? json : undefined;
  return {
    [SPLICED]: true,
    json: () => (text ??= (json as () => string)()),
    value,
  };
}

/** A plain value: serialised only if the text is asked for. */
export const plain = <T>(value: T): Spliced<T> => spliced(() => JSON.stringify(value), () => value);

export const storedDoc = <D>(row: StoredDoc<D>): Spliced<D> => spliced(row.json, () => row.doc);

export function storedDocs<D>(rows: readonly StoredDoc<D>[]): Spliced<D[]> {
  const pieces = (): string[] => {
    const out: string[] = ['['];
    rows.forEach((r, i) => out.push(i === 0 ? r.json : `,${r.json}`));
    out.push(']');
    return out;
  };
  return { ...spliced(() => pieces().join(''), () => rows.map((r) => r.doc)), pieces };
}

/** UTF-8 bytes of the concatenation of `pieces`, written piece by piece (no joined string is made). */
function bytesOf(pieces: readonly string[]): Buffer {
  let length = 0;
  for (const piece of pieces) length += Buffer.byteLength(piece, 'utf8');
  // Not from the shared pool: a kept body must not hold a pool slab alive.
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const piece of pieces) at += out.write(piece, at, 'utf8');
  return out;
}

/** Fields of a response `T` with the keys `K` given as spliced values. */
export type WithSpliced<T, K extends keyof T> = { [P in keyof T]: P extends K ? Spliced<T[P]> : T[P] };

function isSpliced(value: unknown): value is Spliced<unknown> {
  return typeof value === 'object' && value !== null && SPLICED in value;
}

/** The response as a value (the tool surface, tests). */
export function valueOf<T, K extends keyof T>(fields: WithSpliced<T, K>): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) out[key] = isSpliced(value) ? value.value() : value;
  return out as T;
}

/** The response as JSON text: what JSON.stringify(valueOf(fields)) gives, spliced texts left as they are. */
export function jsonOf<T, K extends keyof T>(fields: WithSpliced<T, K>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    const text = isSpliced(value) ? value.json() : JSON.stringify(value);
    // As JSON.stringify does: a member whose value has no JSON form (undefined) is left out.
    if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * A response body as bytes, split around the value of its top-level `readAt` (the time of the read,
 * different on every request): the body is `head` + readAt + `tail`. What does not change between
 * two reads of the same data (head and tail) can be kept and served again with a new readAt, and
 * its weak validator is made from head and tail alone (see `validatorOf`). A body without a
 * top-level `readAt` is all head (`tail` null).
 */
export type BodyParts = { head: Buffer; tail: Buffer | null; etag: string };

/**
 * The weak validator of a body: SHA-1 of the body without the value of its top-level `readAt`, so
 * the same data read again matches. The same tag api/http/caching.ts `etagOf` gives for the text.
 */
export function validatorOf(head: Buffer | string, tail: Buffer | string | null): string {
  const hash = createHash('sha1').update(head);
  if (tail !== null) hash.update(tail);
  return `W/"${hash.digest('base64url')}"`;
}

/** The body with `readAt` put back: one buffer, the bytes JSON.stringify of the value gives. */
export function bodyWith(parts: Pick<BodyParts, 'head' | 'tail'>, readAt: string): Buffer {
  if (parts.tail === null) return parts.head;
  const at = Buffer.from(readAt, 'utf8');
  return Buffer.concat([parts.head, at, parts.tail], parts.head.length + at.length + parts.tail.length);
}

/** A response ready for either transport: as a value or as JSON text (the same bytes as stringifying the value). */
export type Rendered<T> = {
  value(): T;
  json(): string;
  /** Set when served from bytes the service keeps (`fromParts`): what a transport derives from them may be kept too. */
  readonly kept?: true;
  /**
   * The body split around its top-level `readAt` (a string field; all head when there is none), with
   * its validator; null when the body cannot be split so (a readAt that JSON escapes). Same bytes as `json()`.
   */
  parts(): { parts: BodyParts; readAt: string } | null;
};

export function rendered<T, K extends keyof T>(fields: WithSpliced<T, K>): Rendered<T> {
  let split: { value: ReturnType<typeof partsOf> } | undefined;
  return {
    value: () => valueOf(fields),
    json: () => jsonOf(fields),
    parts: () => (split ??= { value: partsOf(fields) }).value,
  };
}

/** A response served again from its kept parts with a new `readAt` (the value is parsed only when asked for). */
export function fromParts<T>(parts: BodyParts, readAt: string): Rendered<T> {
  let text: string | undefined;
  const json = () => (text ??= bodyWith(parts, readAt).toString('utf8'));
  return { json, value: () => JSON.parse(json()) as T, parts: () => ({ parts, readAt }), kept: true };
}

/** `jsonOf`, split around the top-level `readAt` string value (none: null). */
export function partsOf<T, K extends keyof T>(fields: WithSpliced<T, K>): { parts: BodyParts; readAt: string } | null {
  const readAt = (fields as Record<string, unknown>).readAt;
  if (readAt === undefined) {
    const head = bytesOf([jsonOf(fields)]);
    return { parts: { head, tail: null, etag: validatorOf(head, null) }, readAt: '' };
  }
  if (typeof readAt !== 'string' || JSON.stringify(readAt) !== `"${readAt}"`) return null;
  // Members in order, as pieces of text: `{` member `,` … `"readAt":"` | `"` `,` member … `}`.
  const before: string[] = ['{'];
  const after: string[] = ['"'];
  let seen = false;
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'readAt') {
      seen = true;
      continue;
    }
    const pieces = isSpliced(value) ? (value.pieces?.() ?? [value.json()]) : [JSON.stringify(value)];
    if (pieces[0] === undefined) continue;
    if (seen) after.push(`,${JSON.stringify(key)}:`, ...pieces);
    else before.push(`${JSON.stringify(key)}:`, ...pieces, ',');
  }
  before.push('"readAt":"');
  after.push('}');
  const head = bytesOf(before);
  const tail = bytesOf(after);
  return { parts: { head, tail, etag: validatorOf(head, tail) }, readAt };
}

/** The value of a rendered result (what the tool surface and other services use). */
export function asValue<T>(result: Result<Rendered<T>>): Result<T> {
  return result.ok ? ok(result.value.value()) : result;
}
