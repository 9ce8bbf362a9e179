import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sendError } from '../../transport/send-error.ts';

/** The most of a GET or HEAD body read and dropped; past it the request is refused (413) and the connection closed. */
export const UNREAD_BODY_MAX_BYTES = 8 * 1024 * 1024;

const carriesBody = (request: FastifyRequest): boolean =>
  request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;

/**
 * Fastify never reads the body of a GET or HEAD. A connection closed with such a body still unread
 * is reset, and the reset can destroy the answer on its way: the body is read and dropped first.
 */
export function dropUnreadBodies(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || !carriesBody(request)) return;
    let bytes = 0;
    for await (const chunk of request.raw) {
      bytes += (chunk as Buffer).length;
      if (bytes > UNREAD_BODY_MAX_BYTES) {
        reply.header('connection', 'close');
        return sendError(reply, { status: 413, code: 'bad_request', message: 'a GET or HEAD request carries no body' });
      }
    }
  });
}
