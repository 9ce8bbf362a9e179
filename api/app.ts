import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import type { OpenStream } from '../service/changes.ts';
import { errors } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import { mountDocs } from './docs.ts';
import { sendError } from './errors.ts';
import { buildOpenApiDocument } from './openapi.ts';
import type { RestOperation } from './operation.ts';
import { mcpPlugin } from '../mcp/plugin.ts';
import { askOperations } from './routes/asks.ts';
import { historyOperations } from './routes/history.ts';
import { projectOperations } from './routes/projects.ts';
import { thesisOperations } from './routes/thesis.ts';
import { callOperations } from './routes/calls.ts';
import { pulseOperations } from './routes/pulse.ts';
import { searchOperations } from './routes/search.ts';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export type AppOptions = {
  /** Pino options or false; thesis text never reaches a log line (only method, URL, status). */
  logger?: FastifyServerOptions['logger'];
};

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

function registerOperation(app: FastifyInstance, services: Services, op: RestOperation): void {
  app.route({
    method: op.method,
    url: op.path,
    handler: async (request, reply) => {
      reply.header('cache-control', 'private, no-store');
      if (op.headers) reply.headers(op.headers);
      const admitted = await services.guard.admit(request.headers.authorization, op.protection(request.query));
      if (!admitted.ok) return sendError(reply, admitted.refused.error, admitted.refused.headers);
      reply.headers(admitted.value.headers);
      // The client going away ends a long-poll's wait (and a stream) instead of holding it to the end.
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      const input = { caller: admitted.value.caller, params: request.params, query: request.query, body: request.body, headers: request.headers, signal: gone.signal };
      const result = await op.run(input);
      if (!result.ok) return sendError(reply, result.error);
      if (result.value.headers) reply.headers(result.value.headers);
      if ('stream' in result.value) return sendEventStream(reply, result.value.stream);
      // Answered while the server closes (a long-poll ended by shutdown): the connection is not kept for another request.
      if (services.commits.closed.aborted) reply.header('connection', 'close');
      reply.code(result.value.status ?? 200);
      // JSON text made by the service is sent as it is, with the content type Fastify gives a serialised body.
      if ('json' in result.value) return reply.type(JSON_CONTENT_TYPE).send(result.value.json);
      return reply.send(result.value.body);
    },
  });
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

/** Storage failures that a retry can outlive (a locked or unreachable store). */
function isStoreUnavailable(error: unknown): boolean {
  const text = error instanceof Error ? `${error.name} ${error.message} ${(error as { code?: unknown }).code ?? ''}` : '';
  return /SQLITE_BUSY|SQLITE_LOCKED|database is locked|ECONNREFUSED|MongoNetwork|ServerSelection|UNAVAILABLE|disk I\/O/i.test(text);
}

export function buildApp(services: Services, options: AppOptions = {}): FastifyInstance {
  const app = Fastify({
    logger: options.logger ?? false,
    // Query strings are parsed into plain strings (or arrays when repeated); zod decides validity.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
  });

  // Shutdown ends every long-poll (an empty page, same cursor) and change stream before the server waits for requests to finish.
  app.addHook('preClose', (done) => {
    services.commits.close();
    done();
  });

  const operations = restOperations(services);
  for (const op of operations) registerOperation(app, services, op);
  // The tool-protocol endpoint: same instance, same key check, same per-key budget.
  void app.register(mcpPlugin, { services });

  mountHealth(app, services);
  mountInterfaceDescription(app, operations);

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
        error.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? 'request body is too large'
          : error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
            ? 'request body must be application/json'
            : error.code?.startsWith('FST_ERR_CTP') || error instanceof SyntaxError
              ? 'request body is not valid JSON'
              : 'bad request';
      return sendError(reply, { status: status === 413 || status === 415 ? status : 400, code: 'bad_request', message });
    }
    request.log.error({ err: { type: error.name, code: error.code } }, 'unexpected failure');
    if (isStoreUnavailable(error)) return sendError(reply, errors.unavailable('A store is temporarily unavailable; retry shortly.', 5));
    return sendError(reply, { status: 500, code: 'unavailable', message: 'Unexpected failure; retry later.', retryAfter: 5 });
  });

  return app;
}

/** Whether a concrete path matches a Fastify route pattern (`:param` segments). */
function matchesPath(pattern: string, path: string): boolean {
  const a = pattern.split('/').filter(Boolean);
  const b = path.split('/').filter(Boolean);
  return a.length === b.length && a.every((seg, i) => seg.startsWith(':') || seg === b[i]);
}
