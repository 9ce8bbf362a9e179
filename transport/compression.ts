import zlib from 'node:zlib';
import negotiator from '@fastify/accept-negotiator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bodyWith, type BodyParts } from '../service/spliced.ts';
import { giveBackWhenClosed, lentJoin } from './send-buffers.ts';

/**
 * Compression of the JSON the transports send (REST operations, /mcp): br or gzip when the caller
 * accepts it and the body is 1 KB or more, negotiated as @fastify/compress does (which the other
 * routes keep; its hooks on a route cost more than the rest of sending a small body). A body
 * kept by the service (its parts) is compressed once: without a `readAt` the whole compressed body is
 * kept beside it; with one, gzip keeps the compressed part before `readAt` and per request
 * compresses only `readAt` and what follows it (a few bytes on the board, delta and call pages), so
 * a page that is read again costs neither a new deflate of its 60-160 KB nor a new CRC of them.
 * Measured on a 60 KB board page: gzip level 6 (zlib's default) takes 1.9 ms for 12.4 KB, level 4
 * 0.9 ms for 13.3 KB; brotli quality 4 0.8 ms for 13.0 KB (the default 11 is far slower per response).
 */
export const COMPRESSION_THRESHOLD = 1024;
export const GZIP_LEVEL = 4;
export const BROTLI_QUALITY = 4;

export type Encoding = 'br' | 'gzip';

const BR_FIRST: Encoding[] = ['br', 'gzip'];
const GZIP_FIRST: Encoding[] = ['gzip', 'br'];
// `*` (no preference) and `x-gzip` count as gzip, as @fastify/compress reads them.
const GZIP_ALIAS = /\*|x-gzip/gu;

/**
 * The encoding to send a body in, or null (as it is): br before gzip unless `gzipFirst` (a body whose
 * compressed head is kept for gzip only), by the caller's q-values; `x-no-compression` asks for none.
 */
export function negotiateEncoding(headers: Record<string, string | string[] | undefined>, gzipFirst: boolean): Encoding | null {
  const accepted = headers['accept-encoding'];
  if (typeof accepted !== 'string' || headers['x-no-compression'] !== undefined) return null;
  const chosen = negotiator.negotiate(accepted.toLowerCase().replace(GZIP_ALIAS, 'gzip'), gzipFirst ? GZIP_FIRST : BR_FIRST);
  return chosen === 'br' || chosen === 'gzip' ? chosen : null;
}

export function compressWhole(body: Buffer | string, encoding: Encoding): Buffer {
  return encoding === 'br'
    ? zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } })
    : zlib.gzipSync(body, { level: GZIP_LEVEL });
}

/** What is kept per body: the whole compressed body (no readAt), or gzip's deflated head with its CRC. */
type Kept = { br?: Buffer; gzip?: Buffer; gzipHead?: { deflated: Buffer; crc: number } };
const kept = new WeakMap<Buffer, Kept>();

// RFC 1952: magic, deflate, no flags, no time, no extra flags, unknown OS.
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff]);

/**
 * The body `head` + readAt + `tail` in gzip: the head deflated once and ended with a full flush
 * (byte-aligned, nothing after it refers back into it), then readAt and the tail deflated on their
 * own as the final blocks, the CRC continued from the head's and the length of all of it.
 */
function gzipSpliced(parts: BodyParts, tail: Buffer, readAt: Buffer, entry: Kept): Buffer {
  const head = (entry.gzipHead ??= {
    deflated: zlib.deflateRawSync(parts.head, { level: GZIP_LEVEL, finishFlush: zlib.constants.Z_FULL_FLUSH }),
    crc: zlib.crc32(parts.head),
  });
  const rest = Buffer.concat([readAt, tail]);
  const trailer = Buffer.allocUnsafe(8);
  trailer.writeUInt32LE(zlib.crc32(rest, head.crc) >>> 0, 0);
  trailer.writeUInt32LE((parts.head.length + rest.length) % 0x1_0000_0000, 4);
  return Buffer.concat([GZIP_HEADER, head.deflated, zlib.deflateRawSync(rest, { level: GZIP_LEVEL }), trailer]);
}

/** A kept body (head, readAt, tail) in `encoding`, from what is kept for it where it can be. */
export function compressParts(parts: BodyParts, readAt: string, encoding: Encoding): Buffer {
  let entry = kept.get(parts.head);
  if (!entry) kept.set(parts.head, (entry = {}));
  if (parts.tail === null) return (entry[encoding] ??= compressWhole(parts.head, encoding));
  if (encoding === 'gzip') return gzipSpliced(parts, parts.tail, Buffer.from(readAt, 'utf8'), entry);
  return compressWhole(Buffer.concat([parts.head, Buffer.from(readAt, 'utf8'), parts.tail]), encoding);
}

/** A body kept by the service, compressed from what is kept for it when the caller accepts that. */
export function sendParts(request: FastifyRequest, reply: FastifyReply, parts: BodyParts, readAt: string): FastifyReply {
  const size = parts.head.length + (parts.tail === null ? 0 : readAt.length + parts.tail.length);
  const encoding = size >= COMPRESSION_THRESHOLD ? negotiateEncoding(request.headers, parts.tail !== null) : null;
  if (encoding === null) return reply.send(pooledBody(reply, parts, readAt) ?? bodyWith(parts, readAt));
  return encoded(reply, encoding).send(compressParts(parts, readAt, encoding));
}

/**
 * A large kept body joined with this request's readAt into a buffer of the pool, which it goes back to
 * when the response closes; null when the body needs no join or is not of a pooled size.
 */
function pooledBody(reply: FastifyReply, parts: BodyParts, readAt: string): Buffer | null {
  if (parts.tail === null || parts.first?.readAt === readAt) return null;
  const body = lentJoin([parts.head, parts.tail], readAt);
  if (body !== null) giveBackWhenClosed(reply.raw, body);
  return body;
}

/** A body made for this request, as text or as its UTF-8 bytes, compressed when the caller accepts that. */
export function sendBody(request: FastifyRequest, reply: FastifyReply, body: string | Buffer): FastifyReply {
  // A string's length never exceeds its UTF-8 size: the size is counted only when the length falls short.
  const large = body.length >= COMPRESSION_THRESHOLD || (typeof body === 'string' && Buffer.byteLength(body) >= COMPRESSION_THRESHOLD);
  const encoding = large ? negotiateEncoding(request.headers, false) : null;
  if (encoding === null) return reply.send(body);
  return encoded(reply, encoding).send(compressWhole(body, encoding));
}

/** Content-Encoding, and accept-encoding added to whatever Vary the response has (as @fastify/compress does). */
function encoded(reply: FastifyReply, encoding: Encoding): FastifyReply {
  const vary = reply.getHeader('vary');
  const values = vary === undefined ? [] : Array.isArray(vary) ? vary.map(String) : [String(vary)];
  if (!values.some((v) => v.toLowerCase().includes('accept-encoding'))) reply.header('vary', [...values, 'accept-encoding'].join(', '));
  return reply.header('content-encoding', encoding);
}
