import cors from '@fastify/cors';
import fp from 'fastify-plugin';

/** Request headers a browser app may send, and response headers it may read. */
const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'If-None-Match',
  'X-Request-Id',
  'Mcp-Protocol-Version',
  'Mcp-Method',
  'Mcp-Name',
  'Accept',
];
const CORS_EXPOSED_HEADERS = [
  'ETag',
  'Link',
  'Retry-After',
  'X-Request-Id',
  'WWW-Authenticate',
  'RateLimit',
  'RateLimit-Policy',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
];

export type HeadersPluginOptions = {
  /** PULSEBOARD_CORS_ORIGINS: none (no CORS headers), `*`, or the origins allowed. */
  corsOrigins?: readonly string[] | undefined;
};

/** Headers on every response: the request id and nosniff; CORS when origins are configured. */
export const headersPlugin = fp<HeadersPluginOptions>(async (app, { corsOrigins }) => {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
    done();
  });
  if (corsOrigins === undefined) return;
  await app.register(cors, {
    origin: corsOrigins[0] === '*' ? '*' : [...corsOrigins],
    methods: ['GET', 'POST'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 600,
    // A preflight without Origin is answered 204 too (the strict default would send a bare text 400).
    strictPreflight: false,
  });
});
