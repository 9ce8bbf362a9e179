import zlib from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';

type Decode = (body: Buffer, options: { maxOutputLength: number }) => Buffer;

/** What a request body may be sent in: the encodings @fastify/compress decodes on the other routes. */
const DECODERS: Record<string, Decode> = {
  br: zlib.brotliDecompressSync,
  gzip: zlib.gunzipSync,
  deflate: zlib.inflateSync,
  ...(typeof zlib.zstdDecompressSync === 'function' ? { zstd: zlib.zstdDecompressSync as Decode } : {}),
};

/**
 * Text in which the default parser's prototype-poisoning checks cannot match: both look for a quoted
 * `__proto__` or `constructor` key, written out or with `\u` escapes. Such text is parsed by
 * `JSON.parse` alone, as that parser would after finding nothing (its two scans of the text cost a
 * quarter of parsing a tool call); anything else, and anything `JSON.parse` refuses, goes to the parser.
 */
const cannotPoison = (text: string): boolean => !text.includes('\\') && !text.includes('__proto__') && !text.includes('constructor');

/** An error the app's error handler answers like the same refusal from Fastify or @fastify/compress (by code and status). */
const refusal = (code: string, statusCode: number, message: string): Error => Object.assign(new Error(message), { code, statusCode });

/**
 * A JSON body parser for an encapsulated set of routes (`/mcp`): Fastify's own JSON parser (the same
 * prototype-poisoning refusals, empty-body and invalid-JSON errors) over the body read by Fastify (the
 * same body limit), decoded first when it was sent compressed, with the refusals @fastify/compress
 * gives (415 for an encoding it does not decode, 400 for a body that does not decode) and, for the
 * decoded body, the same limit (413). The compress plugin decodes with a preParsing hook, and a route
 * with any preParsing hook pays for running that stage on every request, compressed or not: 6 µs of
 * server CPU an MCP call (paired rounds, pinned), where this costs a header look-up.
 */
export function useJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const limit = app.initialConfig.bodyLimit ?? 1024 * 1024;
  const parseText: typeof parseJson = (request, text, done) => {
    if (text.length === 0 || !cannotPoison(text)) return parseJson(request, text, done);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return parseJson(request, text, done);
    }
    return done(null, parsed);
  };
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request: FastifyRequest, body: Buffer, done) => {
    const encoding = request.headers['content-encoding'];
    if (encoding === undefined || encoding === 'identity') return parseText(request, body.toString('utf8'), done);
    const decode = DECODERS[encoding];
    if (decode === undefined) return done(refusal('FST_CP_ERR_INVALID_CONTENT_ENCODING', 415, 'Unsupported Content-Encoding'), undefined);
    let decoded: Buffer;
    try {
      decoded = decode(body, { maxOutputLength: limit });
    } catch (error) {
      const tooLarge = (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
      return done(
        tooLarge
          ? refusal('FST_ERR_CTP_BODY_TOO_LARGE', 413, 'Request body is too large')
          : refusal('FST_CP_ERR_INVALID_CONTENT', 400, 'Could not decompress the request payload using the provided encoding'),
        undefined,
      );
    }
    return parseText(request, decoded.toString('utf8'), done);
  });
}
