import zlib from 'node:zlib';
import compress from '@fastify/compress';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { projectors } from '../projectors/registry.ts';
import { hashKey, keyIdOf } from '../service/access.ts';
import type { Result } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import type { Caller } from '../service/caller.ts';
import { rpcLabeller, type OperationLabel } from '../mcp/plugin.ts';
import { MCP_PATH, mcpPlugin } from '../mcp/plugin.ts';
import { tools as mcpTools } from '../mcp/tools.ts';
import { credentialMemoOf } from '../transport/credential-memo.ts';
import { joinedBody } from '../transport/reused-buffers.ts';
import { sendError } from '../transport/send-error.ts';
import { buildOpenApiDocument } from './openapi.ts';
import type { OperationInput, OperationReply, RestOperation } from './operation.ts';
import { askOperations } from './routes/asks.ts';
import { historyOperations } from './routes/history.ts';
import { projectOperations } from './routes/projects.ts';
import { thesisOperations } from './routes/thesis.ts';
import { callOperations } from './routes/calls.ts';
import { pulseOperations } from './routes/pulse.ts';
import { searchOperations } from './routes/search.ts';
import { CACHE_NO_STORE, CACHE_REVALIDATE, etagOf, matchesIfNoneMatch } from './http/caching.ts';
import { requestIdOf } from './http/request-id.ts';
import { serverTimeouts } from './http/timeouts.ts';
import { dropUnreadBodies } from './http/unread-bodies.ts';
import { createClientErrorHandler } from './http/transport-errors.ts';
import { createMetrics, meteredGuard, METRICS_CONTENT_TYPE, type Metrics } from './metrics.ts';
import { docsPlugin } from './plugins/docs.ts';
import { errorsPlugin, frameworkErrorHandler } from './plugins/errors.ts';
import { headersPlugin } from './plugins/headers.ts';
import { ssePlugin } from './plugins/sse.ts';

/** Bodies of 1 KB or more travel br or gzip when the caller accepts it, at levels fast enough per response. */
const COMPRESSION = {
  global: true,
  threshold: 1024,
  encodings: ['br', 'gzip'] as ('br' | 'gzip')[],
  brotliOptions: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } },
  zlibOptions: { level: 4 },
};

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
  app.get('/metrics', async (_request, reply) =>
    reply
      .header('cache-control', 'no-store')
      .type(METRICS_CONTENT_TYPE)
      .send(await metrics.render()),
  );
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
  app.get('/healthz', async (_request, reply) =>
    reply.header('cache-control', 'no-store').send(services.health.live()),
  );
  app.get('/readyz', async (_request, reply) => {
    const readiness = await services.health.ready();
    return reply
      .header('cache-control', 'no-store')
      .code(readiness.ready ? 200 : 503)
      .send(readiness);
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
  void app.register(docsPlugin);
}

/**
 * One reason for every request whose client went away: abort() without one builds a DOMException,
 * stack and all, for every long-poll answered (its response's 'close').
 */
const CLIENT_GONE = new DOMException('the client went away', 'AbortError');

/** What an operation is given. */
class RequestInput implements OperationInput {
  readonly caller: Caller;
  readonly params: unknown;
  readonly query: unknown;
  readonly body: unknown;
  readonly headers: OperationInput['headers'];
  readonly authorization: string | undefined;
  readonly #reply: FastifyReply;
  #gone: AbortController | undefined;

  constructor(caller: Caller, request: FastifyRequest, reply: FastifyReply) {
    this.caller = caller;
    this.params = request.params;
    this.query = request.query;
    this.body = request.body;
    this.headers = request.headers;
    this.authorization = request.headers.authorization;
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
      if (raw.destroyed || raw.closed) controller.abort(CLIENT_GONE);
      else raw.once('close', () => controller.abort(CLIENT_GONE));
    }
    return this.#gone.signal;
  }
}

function registerOperation(app: FastifyInstance, services: Services, op: RestOperation): void {
  app.route({
    method: op.method,
    url: op.path,
    handler: async (request, reply) => {
      request.operation = op.operationId;
      // Errors are never cached: `private, no-store` until a successful read says otherwise.
      reply.header('cache-control', CACHE_NO_STORE);
      if (op.headers) reply.headers(op.headers);
      const memo = credentialMemoOf(request.raw.socket);
      const admitted = await services.guard.admit(
        request.headers.authorization,
        op.protection(request.query),
        undefined,
        memo,
      );
      if (!admitted.ok) return sendError(reply, admitted.refused.error, admitted.refused.headers);
      reply.headers(admitted.value.headers);
      const result = await op.run(new RequestInput(admitted.value.caller, request, reply));
      return answer(services, op, request, reply, result);
    },
  });
}

/** Sends what an operation answered: its error, its stream, or its body with the read's caching headers. */
async function answer(
  services: Services,
  op: RestOperation,
  request: FastifyRequest,
  reply: FastifyReply,
  result: Result<OperationReply>,
): Promise<FastifyReply | void> {
  if (!result.ok) return sendError(reply, result.error);
  const value = result.value;
  if (value.headers) reply.headers(value.headers);
  if (op.linksNext && 'json' in value && value.json.continuation)
    reply.header('link', `<${op.path}?${new URLSearchParams(value.json.continuation)}>; rel="next"`);
  if ('stream' in value) return reply.sendEventStream(value.stream);
  // Answered while the server closes (a long-poll ended by shutdown): the connection is not kept for another request.
  if (services.commits.closed.aborted) reply.header('connection', 'close');
  const status = value.status ?? 200;
  // JSON made by the service is sent as the bytes it made, never serialised again.
  const text = 'json' in value ? null : JSON.stringify(value.body);
  reply.code(status).type(JSON_CONTENT_TYPE);
  if (op.method === 'GET' && status === 200) {
    // A successful read: revalidatable (or never stored), with a validator; a match is a 304
    // that has already been admitted and counted like any other request.
    const etag = 'json' in value ? value.json.etag : etagOf(text!);
    reply.header('cache-control', op.cache === 'no-store' ? CACHE_NO_STORE : CACHE_REVALIDATE).header('etag', etag);
    if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
  }
  if (!('json' in value)) return reply.send(text);
  const { head, readAt, tail } = value.json;
  return reply.send(tail === null ? head : joinedBody(reply.raw, head, readAt, tail));
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
  const fixed: Record<string, string> = {
    '/healthz': 'healthz',
    '/readyz': 'readyz',
    '/metrics': 'metrics',
    '/v1/openapi.json': 'openapi',
    '/docs': 'docs',
  };
  const rpcLabelOf = rpcLabeller(mcpTools.map((t) => t.name));
  return (request: FastifyRequest): OperationLabel => {
    if (request.operation !== '') return { operation: request.operation };
    const route = request.routeOptions.url;
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

/**
 * A Fastify instance with the plumbing every listener of this service shares: request ids, the
 * envelope for parser, router and framework refusals, nosniff, CORS when configured, metrics and one
 * access line per request. `operations` are the REST operations it will serve (for labels and 405s).
 */
function httpServer(
  services: Services,
  options: AppOptions,
  metrics: Metrics,
  operations: readonly RestOperation[],
): FastifyInstance {
  const app = Fastify({
    ...serverTimeouts,
    logger: options.logger ?? false,
    // Query strings are parsed into plain strings (or arrays when repeated); zod decides validity.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    genReqId: requestIdOf,
    // One access line per request, written in onResponse below (with the key id and MCP method).
    logController: new LogController({ disableRequestLogging: true }),
    clientErrorHandler: createClientErrorHandler((status) => metrics.rejected(status)),
    frameworkErrors: frameworkErrorHandler(services, metrics),
  });

  const labelOf = operationLabeller(operations);
  app.decorateRequest('operation', '');
  void app.register(headersPlugin, { corsOrigins: services.config.PULSEBOARD_CORS_ORIGINS });
  // /mcp is known too: another method there is 405 with Allow, as on /v1 (OPTIONS included while CORS is off).
  const known = operations.length > 0 ? [...operations, { method: 'POST' as const, path: MCP_PATH }] : operations;
  void app.register(errorsPlugin, { operations: known });
  void app.register(ssePlugin);
  dropUnreadBodies(app);

  app.addHook('onResponse', async (request, reply) => {
    const { operation, rpc } = labelOf(request);
    metrics.request(operation, reply.statusCode, reply.elapsedTime / 1000);
    // Without a logger (or below info) there is no access line, and no key hash to compute for it.
    const log = request.log as typeof request.log & { isLevelEnabled?: (level: string) => boolean };
    if (!log.isLevelEnabled?.('info')) return;
    const keyId = keyIdFor(request, reply.statusCode);
    const line = {
      method: request.method,
      operation,
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
      ...(keyId ? { keyId } : {}),
      ...(rpc ? { rpc } : {}),
    };
    request.log.info(line, 'request completed');
  });

  return app;
}

export function buildApp(services: Services, options: AppOptions = {}): FastifyInstance {
  const config = services.config;
  const metrics = options.metrics ?? metricsFor(services);
  // The operations and /mcp admit requests through a guard that counts its decisions in the metrics.
  const metered: Services = { ...services, guard: meteredGuard(services.guard, metrics) };
  const operations = restOperations(metered);
  const app = httpServer(services, options, metrics, operations);

  // Shutdown ends every long-poll (an empty page, same cursor) and change stream before the server waits for requests to finish.
  app.addHook('preClose', (done) => {
    services.commits.close();
    done();
  });

  void app.register(compress, COMPRESSION);

  // Routes are added in a plugin registered after compress and CORS, whose hooks attach to each
  // route as it is added (onRoute): routes added before them would be left out.
  void app.register(async (routes) => {
    for (const op of operations) registerOperation(routes, metered, op);
    // The tool-protocol endpoint: same instance, same key check, same per-key budget.
    await routes.register(mcpPlugin, { services: metered });
    mountHealth(routes, services);
    mountInterfaceDescription(routes, operations);
    if (config.PULSEBOARD_METRICS === 'on' && config.PULSEBOARD_METRICS_PORT === undefined)
      mountMetrics(routes, metrics);
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
  if (services.config.PULSEBOARD_METRICS === 'on' && services.config.PULSEBOARD_METRICS_PORT === undefined)
    mountMetrics(app, metrics);
  return app;
}
