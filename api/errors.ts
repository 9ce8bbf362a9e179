import type { FastifyReply } from 'fastify';
import type { ServiceError } from '../service/errors.ts';

/** Headers every failed authentication gets, identical whatever the cause. */
const UNAUTHORIZED_HEADERS = { 'www-authenticate': 'Bearer realm="pulseboard"' };

/** Renders a ServiceError as `{error: {code, message}}` with its status and Retry-After. */
export function sendError(reply: FastifyReply, error: ServiceError, headers: Record<string, string> = {}): FastifyReply {
  reply.headers(headers);
  if (error.status === 401) reply.headers(UNAUTHORIZED_HEADERS);
  if (error.retryAfter !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfter))));
  return reply.code(error.status).send({ error: { code: error.code, message: error.message } });
}
