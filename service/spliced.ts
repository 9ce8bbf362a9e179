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

/** A piece of a response's JSON text: text, or its UTF-8 bytes. */
export type Piece = string | Uint8Array;

export type Spliced<T> = {
  readonly [SPLICED]: true;
  json(): string;
  value(): T;
  /**
   * The text as pieces whose concatenation is `json()`, texts or UTF-8 bytes (stored documents as
   * the store read them), written to bytes without joining them first.
   */
  pieces?(): readonly Piece[];
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

export const storedDoc = <D>(row: StoredDoc<D>): Spliced<D> => ({ ...spliced(() => row.json, () => row.doc), pieces: () => [row.utf8] });

export function storedDocs<D>(rows: readonly StoredDoc<D>[]): Spliced<D[]> {
  const pieces = (): Piece[] => {
    const out: Piece[] = ['['];
    rows.forEach((r, i) => (i === 0 ? out.push(r.utf8) : out.push(',', r.utf8)));
    out.push(']');
    return out;
  };
  return { ...spliced(() => `[${rows.map((r) => r.json).join(',')}]`, () => rows.map((r) => r.doc)), pieces };
}

const byteLength = (piece: Piece): number => (typeof piece === 'string' ? Buffer.byteLength(piece, 'utf8') : piece.length);

/** UTF-8 bytes of the concatenation of `pieces` (`length` of them), written piece by piece (no joined string is made). */
function bytesOf(pieces: readonly Piece[], length: number): Buffer {
  // Not from the shared pool: a kept body must not hold a pool slab alive.
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const piece of pieces) at += writePiece(out, piece, at);
  return out;
}

function writePiece(out: Buffer, piece: Piece, at: number): number {
  if (typeof piece === 'string') return out.write(piece, at, 'utf8');
  out.set(piece, at);
  return piece.length;
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
export type BodyParts = {
  head: Buffer;
  tail: Buffer | null;
  etag: string;
  /** The whole body as first made, with the readAt it holds (head and tail are views of it). */
  first?: { readAt: string; body: Buffer };
};

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
export function bodyWith(parts: Pick<BodyParts, 'head' | 'tail' | 'first'>, readAt: string): Buffer {
  if (parts.tail === null) return parts.head;
  if (parts.first?.readAt === readAt) return parts.first.body;
  return joinedBytes([parts.head, parts.tail], readAt);
}

/** Bytes carved from one slab at a time, for bodies up to this size. */
const SLAB_BYTES = 64 * 1024;
const SLAB_PIECE_MAX = 16 * 1024;
let slab: Buffer | null = null;
let slabAt = 0;

/**
 * `size` bytes for a body that is sent and dropped (never kept: a view keeps its whole slab alive).
 * Buffer.allocUnsafe takes a body of 4 KB or less from Node's 8 KB pool and so makes a new pool, an
 * ArrayBuffer, every one or two MCP results (3-4 KB): 1 µs a body, measured, where a view of a 64 KB
 * slab takes 0.2. A slab lives while any body cut from it is unsent (a client that stops reading holds
 * at most one slab).
 */
function sentBytes(size: number): Buffer {
  if (size > SLAB_PIECE_MAX) return Buffer.allocUnsafe(size);
  if (slab === null || slabAt + size > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    slabAt = 0;
  }
  const out = slab.subarray(slabAt, slabAt + size);
  // The next body starts on an 8-byte boundary, as the pool's do.
  slabAt += (size + 7) & ~7;
  return out;
}

/**
 * `pieces` with the UTF-8 of `between` between each two and of `end` after the last, written into one
 * buffer of the exact size, to be sent and dropped (see sentBytes): Buffer.concat of the pieces and of
 * the strings made into buffers first would allocate each of those buffers as well (a small read's
 * response paid more for that than for copying its bytes).
 */
export function joinedBytes(pieces: readonly Buffer[], between: string, end = ''): Buffer {
  const out = sentBytes(joinedSize(pieces, between, end));
  joinInto(out, pieces, between, end);
  return out;
}

/** The UTF-8 size of `pieces` joined with `between` and followed by `end` (see joinedBytes). */
export function joinedSize(pieces: readonly Buffer[], between: string, end = ''): number {
  const betweenBytes = pieces.length > 1 ? Buffer.byteLength(between, 'utf8') : 0;
  let size = Buffer.byteLength(end, 'utf8') + betweenBytes * (pieces.length - 1);
  for (const piece of pieces) size += piece.length;
  return size;
}

/** Writes the join of joinedBytes into the start of `out`, which holds at least its joinedSize. */
export function joinInto(out: Buffer, pieces: readonly Buffer[], between: string, end = ''): void {
  let at = 0;
  for (let i = 0; i < pieces.length; i++) {
    if (i > 0) at += out.write(between, at, 'utf8');
    const piece = pieces[i]!;
    // TypedArray set: Buffer's copy checks and converts its arguments first (a third of the join's time).
    out.set(piece, at);
    at += piece.length;
  }
  out.write(end, at, 'utf8');
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

/**
 * `jsonOf`, split around the top-level `readAt` string value (all head when there is none; null when
 * JSON would escape it). Written once, as one buffer: head and tail are views of it, kept with it as
 * `first` for the read that made it, which sends it without copying.
 */
export function partsOf<T, K extends keyof T>(fields: WithSpliced<T, K>): { parts: BodyParts; readAt: string } | null {
  const readAt = (fields as Record<string, unknown>).readAt;
  if (readAt !== undefined && (typeof readAt !== 'string' || JSON.stringify(readAt) !== `"${readAt}"`)) return null;
  // Members in order: `{` member `,` … `"readAt":"` readAt `"` `,` member … `}`.
  const pieces: Piece[] = ['{'];
  let readAtPiece = -1;
  for (const [key, value] of Object.entries(fields)) {
    const separator = pieces.length === 1 ? '' : ',';
    if (key === 'readAt') {
      pieces.push(`${separator}"readAt":"`);
      readAtPiece = pieces.push(readAt as string) - 1;
      pieces.push('"');
      continue;
    }
    const member = isSpliced(value) ? (value.pieces?.() ?? [value.json()]) : [JSON.stringify(value)];
    // As JSON.stringify does: a member whose value has no JSON form (undefined) is left out.
    if (member[0] === undefined) continue;
    pieces.push(`${separator}${JSON.stringify(key)}:`, ...member);
  }
  pieces.push('}');
  let length = 0;
  let readAtStart = 0;
  let readAtEnd = 0;
  pieces.forEach((piece, i) => {
    if (i === readAtPiece) readAtStart = length;
    length += byteLength(piece);
    if (i === readAtPiece) readAtEnd = length;
  });
  const body = bytesOf(pieces, length);
  if (readAtPiece === -1) return { parts: { head: body, tail: null, etag: validatorOf(body, null) }, readAt: '' };
  const head = body.subarray(0, readAtStart);
  const tail = body.subarray(readAtEnd);
  return { parts: { head, tail, etag: validatorOf(head, tail), first: { readAt: readAt as string, body } }, readAt: readAt as string };
}

/** The value of a rendered result (what the tool surface and other services use). */
export function asValue<T>(result: Result<Rendered<T>>): Result<T> {
  return result.ok ? ok(result.value.value()) : result;
}
