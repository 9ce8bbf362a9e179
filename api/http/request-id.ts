import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Printable, header- and log-safe, bounded: anything else is replaced by a minted id (never echoed). */
const ACCEPTED_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify's `genReqId`: the caller's X-Request-Id when it is acceptable, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && ACCEPTED_ID.test(given) ? given : randomUUID();
}
