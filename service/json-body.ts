import { createHash } from 'node:crypto';
import type { StoredDoc } from '../readmodels/port.ts';
import { ok, type Result } from './errors.ts';

/**
 * A read's response made once as JSON bytes, with stored documents written in as the projectors
 * serialised them (never parsed and serialised again). The bytes are split around the value of the
 * top-level `readAt` (the time of the read): a kept body is served again with a new readAt, and its
 * weak validator leaves readAt out, so the same data read again matches.
 */
export type JsonBody<T> = {
  /** The bytes before the readAt value; the whole body when `tail` is null. */
  readonly head: Buffer;
  /** The bytes after the readAt value; null when the body has no top-level readAt. */
  readonly tail: Buffer | null;
  readonly readAt: string;
  /** Weak validator: SHA-1 of head and tail. */
  readonly etag: string;
  /** The body as a value (the tool surface, other services): parsed only when asked for. */
  value(): T;
  /** The query of the page that follows, when there is one: REST names it in a `Link` header, ahead of the body. */
  readonly continuation?: Readonly<Record<string, string>>;
};

/** A member whose JSON text is known already (stored documents): written as it is, whole or in pieces. */
export type RawJson<T> = {
  readonly raw: true;
  readonly bytes: () => Uint8Array | string | readonly Uint8Array[];
  readonly value: () => T;
};

const isRaw = (member: unknown): member is RawJson<unknown> =>
  typeof member === 'object' && member !== null && (member as { raw?: unknown }).raw === true && 'bytes' in member;

export const storedJson = <D>(row: StoredDoc<D>): RawJson<D> => ({
  raw: true,
  bytes: () => row.utf8,
  value: () => row.doc,
});

/** The rows' stored bytes as the pieces of one array: the body joins them once, with the rest of it. */
export function storedJsonList<D>(rows: readonly StoredDoc<D>[]): RawJson<D[]> {
  return {
    raw: true,
    bytes: () => [OPEN, ...rows.flatMap((r, i) => (i === 0 ? [r.utf8] : [COMMA, r.utf8])), CLOSE],
    value: () => rows.map((r) => r.doc),
  };
}
const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** Fields of a response `T`, the keys `K` given as raw JSON. */
export type Fields<T, K extends keyof T> = { [P in keyof T]: P extends K ? RawJson<T[P]> : T[P] };

export function validatorOf(head: Buffer | string, tail: Buffer | string | null): string {
  const hash = createHash('sha1').update(head);
  if (tail !== null) hash.update(tail);
  return `W/"${hash.digest('base64url')}"`;
}

/** The whole body, readAt put back in: the bytes JSON.stringify of the value gives. */
export function bytesOf(body: Pick<JsonBody<unknown>, 'head' | 'tail' | 'readAt'>): Buffer {
  return body.tail === null ? body.head : Buffer.concat([body.head, Buffer.from(body.readAt, 'utf8'), body.tail]);
}

/**
 * The body of `fields` (members in their order, raw ones as they are, one without a JSON form left
 * out as JSON.stringify does). A readAt that JSON would escape is not split around (never the case
 * for the ISO times the service writes).
 */
export function jsonBody<T, K extends keyof T>(fields: Fields<T, K>): JsonBody<T> {
  const readAt = (fields as Record<string, unknown>).readAt;
  const splits = typeof readAt === 'string' && JSON.stringify(readAt) === `"${readAt}"`;
  const before: (Uint8Array | string)[] = ['{'];
  const after: (Uint8Array | string)[] = [];
  let into = before;
  let separator = '';
  for (const [key, member] of Object.entries(fields)) {
    const text = isRaw(member) ? member.bytes() : (JSON.stringify(member) as string | undefined);
    if (text === undefined) continue;
    if (key === 'readAt' && splits) {
      before.push(`${separator}"readAt":"`);
      into = after;
      after.push('"');
    } else if (typeof text === 'string' || text instanceof Uint8Array)
      into.push(`${separator}${JSON.stringify(key)}:`, text);
    else into.push(`${separator}${JSON.stringify(key)}:`, ...text);
    separator = ',';
  }
  into.push('}');
  const head = Buffer.concat(before.map(toBytes));
  const tail = splits ? Buffer.concat(after.map(toBytes)) : null;
  let value: T | undefined;
  const valueOf = (): T => {
    if (value !== undefined) return value;
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(fields)) out[key] = isRaw(member) ? member.value() : member;
    return (value = out as T);
  };
  return { head, tail, readAt: splits ? readAt : '', etag: validatorOf(head, tail), value: valueOf };
}

const toBytes = (piece: Uint8Array | string): Uint8Array =>
  typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;

/** A kept body served again with this read's `readAt`; its value is parsed from the bytes when asked for. */
export function withReadAt<T>(kept: JsonBody<unknown>, readAt: string): JsonBody<T> {
  if (kept.tail === null) return kept as JsonBody<T>;
  let value: T | undefined;
  const body = { head: kept.head, tail: kept.tail, readAt, etag: kept.etag };
  const continuation = kept.continuation === undefined ? {} : { continuation: kept.continuation };
  return { ...body, ...continuation, value: () => (value ??= JSON.parse(bytesOf(body).toString('utf8')) as T) };
}

/**
 * What a cache keeps of a body: its bytes, validator and continuation, not what it was made from (a
 * page's rows); its value is parsed from the bytes on each call.
 */
export function keptBody<T>(body: JsonBody<T>): JsonBody<T> {
  const bytes = { head: body.head, tail: body.tail, readAt: body.readAt };
  const continuation = body.continuation === undefined ? {} : { continuation: body.continuation };
  return { ...bytes, etag: body.etag, ...continuation, value: () => JSON.parse(bytesOf(bytes).toString('utf8')) as T };
}

/** The value of a read (the tool surface and other services). */
export function asValue<T>(result: Result<JsonBody<T>>): Result<T> {
  return result.ok ? ok(result.value.value()) : result;
}
