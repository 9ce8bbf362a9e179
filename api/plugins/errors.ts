import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { echoed, errors, type ServiceError } from '../../service/errors.ts';
import type { Services } from '../../service/services.ts';
import { isStoreUnavailable } from '../../service/store-failures.ts';
import { sendError } from '../../transport/send-error.ts';
import { CACHE_NO_STORE } from '../http/caching.ts';
import type { Metrics } from '../metrics.ts';
import type { RestOperation } from '../operation.ts';

/** What each framework or plugin refusal of a request tells the caller (fixed words, no input). */
const CLIENT_FAULTS: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'request body is too large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'request body must be application/json',
  FST_CP_ERR_INVALID_CONTENT_ENCODING: 'unsupported Content-Encoding; send the body as it is, or gzip or br',
  FST_CP_ERR_INVALID_CONTENT: 'the request body could not be decompressed with its Content-Encoding',
  PULSEBOARD_FORBIDDEN_KEY: 'request body holds a key that is not accepted (__proto__, or constructor with prototype)',
};

const parsesAsJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** The routes answered 405 with Allow on another method: the REST operations, and /mcp (POST). */
export type ErrorsPluginOptions = { operations: readonly Pick<RestOperation, 'method' | 'path'>[] };

/**
 * The envelope for everything that is not an operation's own answer: an unknown route (405 with
 * Allow where another method matches), a refused body, and any failure (503 for a store a retry can
 * outlive, else 500). JSON bodies go through Fastify's own parser, prototype-poisoning checks on.
 */
export const errorsPlugin = fp<ErrorsPluginOptions>(async (app, { operations }) => {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) => {
    void parseJson(request, text as string, (error, value) => {
      // Valid JSON refused by the parser: a poisoning key, not a syntax error.
      if (error && text.length > 0 && parsesAsJson(text as string)) return done(forbiddenKey(), undefined);
      return done(error, value);
    });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = operations.filter((op) => matchesPath(op.path, path)).map((op) => op.method);
    if (allowed.length > 0) {
      reply.header('allow', [...new Set(allowed)].join(', '));
      const message = `method ${echoed(request.method)} is not allowed here; use ${allowed.join(' or ')}`;
      return sendError(reply, { status: 405, code: 'bad_request', message });
    }
    return sendError(reply, errors.notFound(`no such endpoint: ${echoed(request.method)} ${echoed(path)}`));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Body parsing and other client faults: say what is wrong without echoing the input.
      const syntax = error.code?.startsWith('FST_ERR_CTP') || error instanceof SyntaxError;
      const message = CLIENT_FAULTS[error.code] ?? (syntax ? 'request body is not valid JSON' : 'bad request');
      return sendError(reply, {
        status: status === 413 || status === 415 ? status : 400,
        code: 'bad_request',
        message,
      });
    }
    request.log.error({ err: { type: error.name, code: error.code } }, 'unexpected failure');
    if (isStoreUnavailable(error))
      return sendError(reply, errors.unavailable('A store is temporarily unavailable; retry shortly.', 5));
    return sendError(reply, {
      status: 500,
      code: 'unavailable',
      message: 'Unexpected failure; retry later.',
      retryAfter: 5,
    });
  });
});

function forbiddenKey(): FastifyError {
  return Object.assign(new Error(CLIENT_FAULTS.PULSEBOARD_FORBIDDEN_KEY), {
    code: 'PULSEBOARD_FORBIDDEN_KEY',
    statusCode: 400,
  }) as FastifyError;
}

/**
 * Fastify's `frameworkErrors`: the router refused the URL. A key is checked first, so an
 * unauthenticated caller learns only 401.
 */
export function frameworkErrorHandler(services: Services, metrics: Metrics) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    void answerFrameworkError(services, metrics, error, request, reply);
  };
}

async function answerFrameworkError(
  services: Services,
  metrics: Metrics,
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  reply
    .header('x-request-id', request.id)
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', CACHE_NO_STORE);
  let refusal: ServiceError;
  // A key check that fails (a store down) answers as no key: this refusal says nothing more either way.
  const caller = await services.access.authenticate(request.headers.authorization).catch(() => null);
  if (!caller) refusal = errors.unauthorized();
  else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    refusal = { status: 414, code: 'bad_request', message: 'a path segment is longer than 1000 characters' };
  } else refusal = errors.badRequest('the URL is not valid (bad percent-encoding or characters)');
  metrics.request('unmatched', refusal.status, reply.elapsedTime / 1000);
  sendError(reply, refusal);
}

/** Whether a concrete path matches a Fastify route pattern (`:param` segments). */
function matchesPath(pattern: string, path: string): boolean {
  const a = pattern.split('/').filter(Boolean);
  const b = path.split('/').filter(Boolean);
  return a.length === b.length && a.every((seg, i) => seg.startsWith(':') || seg === b[i]);
}
