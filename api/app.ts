import type { Socket } from 'node:net';
import zlib from 'node:zlib';
import compress from '@fastify/compress';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { projectors } from '../projectors/registry.ts';
import { hashKey, keyIdOf } from '../service/access.ts';
import { andThen, type Awaitable } from '../readmodels/awaitable.ts';
import { errors, type Result, type ServiceError } from '../service/errors.ts';
import type { OpenStream } from '../service/changes.ts';
import type { Services } from '../service/services.ts';
import { mountDocs } from './docs.ts';
import { sendError } from './errors.ts';
import { buildOpenApiDocument } from './openapi.ts';
import type { OperationInput, OperationReply, RestOperation } from './operation.ts';
import type { Caller } from '../service/caller.ts';
import { rpcLabeller, type OperationLabel } from '../mcp/labels.ts';
import { MCP_PATH, mcpPlugin } from '../mcp/plugin.ts';
import { askOperations } from './routes/asks.ts';
import { historyOperations } from './routes/history.ts';
import { projectOperations } from './routes/projects.ts';
import { thesisOperations } from './routes/thesis.ts';
import { callOperations } from './routes/calls.ts';
import { pulseOperations } from './routes/pulse.ts';
import { searchOperations } from './routes/search.ts';
import { credentialMemoOf } from '../transport/credential-memo.ts';
import { pendingOnly } from '../transport/handler-result.ts';
import { createTurnWrites } from '../transport/turn-writes.ts';
import { BROTLI_QUALITY, COMPRESSION_THRESHOLD, GZIP_LEVEL, sendBody, sendParts } from '../transport/compression.ts';
import { CACHE_NO_STORE, CACHE_REVALIDATE, etagOf, matchesIfNoneMatch } from './http/caching.ts';
import { requestIdOf } from './http/request-id.ts';
import { serverTimeouts } from './http/timeouts.ts';
import { createClientErrorHandler } from './http/transport-errors.ts';
import { createMetrics, meteredGuard, METRICS_CONTENT_TYPE, type Metrics } from './metrics.ts';
import { tools as mcpTools } from '../mcp/tools.ts';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export type AppOptions = {
  /** Pino options or false; thesis text never reaches a log line (only method, URL, status). */
  logger?: FastifyServerOptions['logger'];
  /**
   * The process's metrics (serve shares them with ingest); built here when not given. `/metrics`
   * is mounted on this app unless PULSEBOARD_METRICS is off or PULSEBOARD_METRICS_PORT moves it.
   */
  metrics?: Metrics;
};

/** The metrics of a process over these services' stores. */
export function metricsFor(services: Services): Metrics {
  return createMetrics({
    log: services.stores.log,
    store: services.stores.store,
    collections: projectors.map((p) => p.collection),
    ready: () => services.health.ready(),
  });
}

/** `/metrics`: Prometheus text, unauthenticated like /healthz (it carries no key, key id or caller text). */
export function mountMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', async (_request, reply) => reply.header('cache-control', 'no-store').type(METRICS_CONTENT_TYPE).send(await metrics.render()));
}

/** Every REST operation, in the order the OpenAPI document lists them. */
export function restOperations(services: Services): RestOperation[] {
  return [
    ...projectOperations(services),
    ...askOperations(services),
    ...historyOperations(services),
    ...searchOperations(services),
    ...callOperations(services),
    ...pulseOperations(services),
    ...thesisOperations(services),
  ];
}

/** Outside /v1: unauthenticated, not rate-limited, for orchestrators and load balancers. */
export function mountHealth(app: FastifyInstance, services: Services): void {
  app.get('/healthz', async (_request, reply) => reply.header('cache-control', 'no-store').send(services.health.live()));
  app.get('/readyz', async (_request, reply) => {
    const readiness = await services.health.ready();
    return reply.header('cache-control', 'no-store').code(readiness.ready ? 200 : 503).send(readiness);
  });
}

/**
 * The interface description and its docs page, generated once from the operations. Public (no key):
 * they describe the interface and disclose no data.
 */
export function mountInterfaceDescription(app: FastifyInstance, operations: readonly RestOperation[]): void {
  const document = buildOpenApiDocument(operations);
  const json = JSON.stringify(document);
  app.get('/v1/openapi.json', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=300').type('application/json; charset=utf-8').send(json),
  );
  mountDocs(app);
}

/**
 * What an operation is given. A class, not an object literal with a getter: V8 keeps such a literal
 * in dictionary mode, and one is made per request.
 */
class RequestInput implements OperationInput {
  readonly caller: Caller;
  readonly params: unknown;
  readonly query: unknown;
  readonly body: unknown;
  readonly headers: OperationInput['headers'];
  readonly #reply: FastifyReply;
  #gone: AbortController | undefined;

  constructor(caller: Caller, request: FastifyRequest, reply: FastifyReply) {
    this.caller = caller;
    this.params = request.params;
    this.query = request.query;
    this.body = request.body;
    this.headers = request.headers;
    this.#reply = reply;
  }

  /**
   * The client going away ends a long-poll's wait (and a stream) instead of holding it to the end.
   * Made when an operation first asks for it (most reads never wait).
   */
  get signal(): AbortSignal {
    if (!this.#gone) {
      const controller = (this.#gone = new AbortController());
      const raw = this.#reply.raw;
      if (raw.destroyed || raw.closed) controller.abort();
      else raw.once('close', () => controller.abort());
    }
    return this.#gone.signal;
  }
}

function registerOperation(app: FastifyInstance, services: Services, op: RestOperation): void {
  // Errors are never cached: `private, no-store` until a successful read says otherwise.
  app.route({
    method: op.method,
    url: op.path,
    // Compressed by the handler (transport/compression.ts), which keeps compressed bodies: no plugin hooks.
    compress: false,
    // A GET has no body to decompress: without the plugin's preParsing hook, a read runs no hook before its handler but onRequest.
    ...(op.method === 'GET' ? { decompress: false } : {}),
    // Not async: a read the service answers at once is sent in the same turn (see readmodels/awaitable.ts);
    // Fastify waits only for what is still pending.
    handler: (request, reply) => {
      request.operation = op.operationId;
      reply.header('cache-control', CACHE_NO_STORE);
      if (op.headers) reply.headers(op.headers);
      const admission = services.guard.admit(request.headers.authorization, op.protection(request.query), undefined, credentialMemoOf(request.raw.socket));
      const answered = andThen(admission, (admitted): Awaitable<FastifyReply | void> => {
        if (!admitted.ok) return sendError(reply, admitted.refused.error, admitted.refused.headers);
        reply.headers(admitted.value.headers);
        return andThen(op.run(new RequestInput(admitted.value.caller, request, reply)), (result) => answer(services, op, request, reply, result));
      });
      return pendingOnly(answered);
    },
  });
}

/** Sends what an operation answered: its error, its stream, or its body with the read's caching headers. */
function answer(services: Services, op: RestOperation, request: FastifyRequest, reply: FastifyReply, result: Result<OperationReply>): Awaitable<FastifyReply | void> {
  if (!result.ok) return sendError(reply, result.error);
  if (result.value.headers) reply.headers(result.value.headers);
  if ('stream' in result.value) return sendEventStream(reply, result.value.stream);
  // Answered while the server closes (a long-poll ended by shutdown): the connection is not kept for another request.
  if (services.commits.closed.aborted) reply.header('connection', 'close');
  const status = result.value.status ?? 200;
  reply.code(status);
  // JSON made by the service is sent as it is, with the content type Fastify gives a serialised
  // body: bytes around readAt (their validator made once, with them), or text.
  const value = result.value;
  const kept = 'parts' in value ? value : null;
  const text = 'parts' in value ? '' : 'json' in value ? value.json : JSON.stringify(value.body);
  reply.type(JSON_CONTENT_TYPE);
  if (op.method === 'GET' && status === 200) {
    // A successful read: revalidatable (or never stored), with a validator; a match is a 304
    // that has already been admitted and counted like any other request.
    const etag = kept ? kept.parts.etag : etagOf(text);
    reply.header('cache-control', op.cache === 'no-store' ? CACHE_NO_STORE : CACHE_REVALIDATE).header('etag', etag);
    if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
  }
  return kept ? sendParts(request, reply, kept.parts, kept.readAt) : sendBody(request, reply, text);
}

/**
 * Writes a change stream as server-sent events until the stream ends (client gone, shutdown) or a
 * read fails (the client reconnects with Last-Event-ID and loses nothing). Each event's data is one
 * line: stored JSON text has no raw line breaks.
 */
async function sendEventStream(reply: FastifyReply, stream: OpenStream): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
  // The connection is not reused after a stream (the client reconnects), and a server closing must not wait on it.
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-accel-buffering': 'no', connection: 'close' });
  const write = async (text: string) => {
    if (res.write(text)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };
  try {
    await write(': stream open\n\n');
    for await (const event of stream.events) {
      if (res.destroyed) break;
      await write(event.kind === 'row' ? `id: ${event.cursor}\ndata: ${event.json}\n\n` : ': heartbeat\n\n');
    }
  } catch (error) {
    reply.log.warn({ err: { type: error instanceof Error ? error.name : typeof error } }, 'change stream ended by a failed read');
  } finally {
    stream.close();
    res.end();
  }
}

/** What each framework or plugin refusal of a request tells the caller (fixed words, no input). */
const CLIENT_FAULTS: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'request body is too large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'request body must be application/json',
  FST_CP_ERR_INVALID_CONTENT_ENCODING: 'unsupported Content-Encoding; send the body as it is, or gzip or br',
  FST_CP_ERR_INVALID_CONTENT: 'the request body could not be decompressed with its Content-Encoding',
};

/** Storage failures that a retry can outlive (a locked or unreachable store). */
function isStoreUnavailable(error: unknown): boolean {
  const text = error instanceof Error ? `${error.name} ${error.message} ${(error as { code?: unknown }).code ?? ''}` : '';
  return /SQLITE_BUSY|SQLITE_LOCKED|database is locked|ECONNREFUSED|MongoNetwork|ServerSelection|UNAVAILABLE|disk I\/O/i.test(text);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The REST operation's id once its handler runs; '' before that and on every other route. */
    operation: string;
  }
}

/** Operation label of a request, from the route it matched (bounded: never the path as sent). */
function operationLabeller(operations: readonly RestOperation[]) {
  const byRoute = new Map<string, string>(operations.map((op) => [`${op.method} ${op.path}`, op.operationId]));
  const fixed: Record<string, string> = { '/healthz': 'healthz', '/readyz': 'readyz', '/metrics': 'metrics', '/v1/openapi.json': 'openapi', '/docs': 'docs' };
  const rpcLabelOf = rpcLabeller(mcpTools.map((t) => t.name));
  return (request: FastifyRequest): OperationLabel => {
    if (request.operation !== '') return { operation: request.operation };
    // The common MCP call, known by its URL: the route options getter builds an object per call.
    const route = request.method === 'POST' && request.url === MCP_PATH ? MCP_PATH : request.routeOptions.url;
    if (route === undefined) return { operation: 'unmatched' };
    if (request.method === 'OPTIONS') return { operation: 'preflight' };
    const rest = byRoute.get(`${request.method} ${route}`);
    if (rest) return { operation: rest };
    if (route === MCP_PATH) return rpcLabelOf(request.body);
    return { operation: fixed[route] ?? 'other' };
  };
}

/** The id of the key a request presented, when it was accepted (never the key itself). */
function keyIdFor(request: FastifyRequest, status: number): string | undefined {
  if (status === 401) return undefined;
  const match = /^Bearer (\S+)$/.exec(request.headers.authorization?.trim() ?? '');
  return match ? keyIdOf(hashKey(match[1]!)) : undefined;
}

/** onSend of the docs routes: no page under /docs may be framed. */
function framedNowhere(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void): void {
  reply.header('content-security-policy', withFrameAncestors(reply.getHeader('content-security-policy') as string | undefined));
  reply.header('x-frame-options', 'DENY');
  done(null, payload);
}

/** `frame-ancestors 'none'` added to whatever policy the docs page sends (or as its policy). */
function withFrameAncestors(policy: string | undefined): string {
  if (!policy) return "frame-ancestors 'none'";
  return /frame-ancestors/i.test(policy) ? policy : `${policy}; frame-ancestors 'none'`;
}

/** Request headers a browser app may send, and response headers it may read. */
const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'If-None-Match', 'X-Request-Id', 'Mcp-Protocol-Version', 'Mcp-Method', 'Mcp-Name', 'Accept'];
const CORS_EXPOSED_HEADERS = ['ETag', 'Retry-After', 'X-Request-Id', 'WWW-Authenticate', 'RateLimit', 'RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

/**
 * A Fastify instance with the plumbing every listener of this service shares: request ids, the
 * envelope for parser, router and framework refusals, nosniff, metrics and one access line per
 * request. `operations` are the REST operations it will serve (for labels and 405s).
 */
function httpServer(services: Services, options: AppOptions, metrics: Metrics, operations: readonly RestOperation[]): FastifyInstance {
  const app = Fastify({
    ...serverTimeouts,
    logger: options.logger ?? false,
    // Query strings are parsed into plain strings (or arrays when repeated); zod decides validity.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    genReqId: requestIdOf,
    // One access line per request, written in onResponse below (with the key id and MCP method).
    logController: new LogController({ disableRequestLogging: true }),
    clientErrorHandler: createClientErrorHandler((status) => metrics.rejected(status)),
    frameworkErrors: (error, request, reply) => {
      void answerFrameworkError(error, request, reply);
    },
  });

  /** The router refused the URL: a key is checked first, so an unauthenticated caller learns only 401. */
  async function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff').header('cache-control', CACHE_NO_STORE);
    let refusal: ServiceError;
    // A key check that fails (a store down) answers as no key: this refusal says nothing more either way.
    const caller = await Promise.resolve()
      .then(() => services.access.authenticate(request.headers.authorization))
      .catch(() => null);
    if (!caller) refusal = errors.unauthorized();
    else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') refusal = { status: 414, code: 'bad_request', message: 'a path segment is longer than 1000 characters' };
    else refusal = errors.badRequest('the URL is not valid (bad percent-encoding or characters)');
    metrics.request('unmatched', refusal.status, reply.elapsedTime / 1000);
    sendError(reply, refusal);
  }

  // Each connection's writes leave at the end of the event-loop turn, with the turn's other responses.
  const turnWrites = createTurnWrites();
  app.server.on('connection', (socket: Socket) => turnWrites.adopt(socket));

  const labelOf = operationLabeller(operations);
  // Set by a REST operation's handler: its label without a look-up (the route options getter builds an object per call).
  app.decorateRequest('operation', '');

  // Hooks on every request take a callback, not a promise: one resolution and microtask fewer each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    accessLine(request, reply);
    done();
  });
  function accessLine(request: FastifyRequest, reply: FastifyReply): void {
    const { operation, rpc } = labelOf(request);
    const seconds = reply.elapsedTime / 1000;
    metrics.request(operation, reply.statusCode, seconds);
    // Without a logger (or below info) there is no access line, and no key hash to compute for it.
    const log = request.log as typeof request.log & { isLevelEnabled?: (level: string) => boolean };
    if (!log.isLevelEnabled?.('info')) return;
    const keyId = keyIdFor(request, reply.statusCode);
    request.log.info(
      { method: request.method, operation, statusCode: reply.statusCode, responseTimeMs: Math.round(reply.elapsedTime * 10) / 10, ...(keyId ? { keyId } : {}), ...(rpc ? { rpc } : {}) },
      'request completed',
    );
  }

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = operations.filter((op) => matchesPath(op.path, path)).map((op) => op.method);
    if (allowed.length > 0) {
      reply.header('allow', [...new Set(allowed)].join(', '));
      return sendError(reply, { status: 405, code: 'bad_request', message: `method ${request.method} is not allowed here; use ${allowed.join(' or ')}` });
    }
    return sendError(reply, errors.notFound(`no such endpoint: ${request.method} ${path}`));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Body parsing and other client faults: say what is wrong without echoing the input.
      const message =
        CLIENT_FAULTS[error.code] ?? (error.code?.startsWith('FST_ERR_CTP') || error instanceof SyntaxError ? 'request body is not valid JSON' : 'bad request');
      return sendError(reply, { status: status === 413 || status === 415 ? status : 400, code: 'bad_request', message });
    }
    request.log.error({ err: { type: error.name, code: error.code } }, 'unexpected failure');
    if (isStoreUnavailable(error)) return sendError(reply, errors.unavailable('A store is temporarily unavailable; retry shortly.', 5));
    return sendError(reply, { status: 500, code: 'unavailable', message: 'Unexpected failure; retry later.', retryAfter: 5 });
  });

  return app;
}

export function buildApp(services: Services, options: AppOptions = {}): FastifyInstance {
  const config = services.config;
  const metrics = options.metrics ?? metricsFor(services);
  const guarded: Services = { ...services, guard: meteredGuard(services.guard, metrics) };
  const operations = restOperations(guarded);
  const app = httpServer(services, options, metrics, operations);

  // Shutdown ends every long-poll (an empty page, same cursor) and change stream before the server waits for requests to finish.
  app.addHook('preClose', (done) => {
    services.commits.close();
    done();
  });

  // The docs page and anything served under it may not be framed (its own CSP, whatever it is, keeps
  // the rest): a hook on those routes alone, so that no other response runs it.
  app.addHook('onRoute', (route) => {
    if (route.url !== '/docs' && !route.url.startsWith('/docs/')) return;
    const own = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend];
    route.onSend = [...own, framedNowhere];
  });

  // JSON over 1 KB travels br or gzip when the caller accepts it: the REST operations compress in
  // their handler (transport/compression.ts, as /mcp does, with the same levels); this plugin serves every other route.
  void app.register(compress, {
    global: true,
    threshold: COMPRESSION_THRESHOLD,
    encodings: ['br', 'gzip'],
    brotliOptions: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } },
    zlibOptions: { level: GZIP_LEVEL },
  });
  const origins = config.PULSEBOARD_CORS_ORIGINS;
  if (origins !== undefined) {
    void app.register(cors, {
      origin: origins[0] === '*' ? '*' : origins,
      methods: ['GET', 'POST'],
      allowedHeaders: CORS_ALLOWED_HEADERS,
      exposedHeaders: CORS_EXPOSED_HEADERS,
      maxAge: 600,
      // A preflight without Origin is answered 204 too (the strict default would send a bare text 400).
      strictPreflight: false,
    });
  }

  // Routes are added in a plugin registered after compress and cors, whose hooks attach to each
  // route as it is added (onRoute): routes added before them would be left out.
  void app.register(async (routes) => {
    for (const op of operations) registerOperation(routes, guarded, op);
    // The tool-protocol endpoint: same instance, same key check, same per-key budget.
    await routes.register(mcpPlugin, { services: guarded });
    mountHealth(routes, services);
    mountInterfaceDescription(routes, operations);
    if (config.PULSEBOARD_METRICS === 'on' && config.PULSEBOARD_METRICS_PORT === undefined) mountMetrics(routes, metrics);
  });

  return app;
}

/** PULSEBOARD_METRICS_PORT: /metrics alone, with the same envelope for anything else. */
export function buildMetricsApp(services: Services, metrics: Metrics): FastifyInstance {
  const app = httpServer(services, {}, metrics, []);
  mountMetrics(app, metrics);
  return app;
}

/** Worker roles (projectors, thesis reader, ingest): /healthz, /readyz and /metrics with the same plumbing. */
export function buildWorkerApp(services: Services, options: AppOptions = {}): FastifyInstance {
  const metrics = options.metrics ?? metricsFor(services);
  const app = httpServer(services, options, metrics, []);
  mountHealth(app, services);
  if (services.config.PULSEBOARD_METRICS === 'on' && services.config.PULSEBOARD_METRICS_PORT === undefined) mountMetrics(app, metrics);
  return app;
}

/** Whether a concrete path matches a Fastify route pattern (`:param` segments). */
function matchesPath(pattern: string, path: string): boolean {
  const a = pattern.split('/').filter(Boolean);
  const b = path.split('/').filter(Boolean);
  return a.length === b.length && a.every((seg, i) => seg.startsWith(':') || seg === b[i]);
}
