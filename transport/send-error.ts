import type { FastifyReply } from 'fastify';
import { errorResponse, type ServiceError } from '../service/errors.ts';

/** Renders a ServiceError as `{error: {code, message}}` with its status and headers (service/errors.ts decides them). */
export function sendError(
  reply: FastifyReply,
  error: ServiceError,
  headers: Record<string, string> = {},
): FastifyReply {
  const answer = errorResponse(error, headers);
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}
