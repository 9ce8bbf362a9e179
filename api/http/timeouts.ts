/**
 * How long the HTTP server waits for a client, in one place (Node's own server options, set where
 * Fastify creates the server). A client must send a whole request head within HEAD_TIMEOUT_MS, or
 * it gets a 408 and its connection is closed: slow (a byte at a time) and silent clients cannot hold
 * sockets. An idle connection after a response is kept KEEP_ALIVE_TIMEOUT_MS, longer than a load
 * balancer's usual 60 s, so the balancer always closes first and never reuses a socket we closed.
 */

/** Whole request head (request line and headers): from the connection, or a kept-alive one's next first byte. */
export const HEAD_TIMEOUT_MS = 10_000;

/** Whole request, head and body (bodies are at most 1 MiB); the response's own time is not counted. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** Idle keep-alive connection after a response: above the 60 s idle timeout of common load balancers. */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** How often Node looks for connections past the two deadlines above (its default, 30 s, would add up to 30 s). */
export const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/**
 * Fastify's options for these. `connectionTimeout` (an inactivity timeout) stays off: a long-poll or
 * a stream is a whole request waiting for its answer, with no bytes moving for as long as it waits.
 */
export const serverTimeouts = {
  keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
  requestTimeout: REQUEST_TIMEOUT_MS,
  connectionTimeout: 0,
  http: {
    headersTimeout: HEAD_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
  },
} as const;
