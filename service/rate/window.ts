/**
 * The window rule both limiters implement, so REST and MCP see one behaviour whichever store
 * counts ("more than 60 requests in 60 seconds" gives 429).
 *
 * Sliding log: a request is counted at the millisecond it was allowed and stops counting exactly
 * `window` later. A request is allowed while fewer than `limit` counted requests are younger than
 * the window, so no span of `window` ever holds more than `limit` allowed requests (a fixed window
 * lets 2 × limit through around its edge). Refused requests are not counted: a client that waits
 * the Retry-After it was given is let through, and one that keeps hammering is not locked out longer.
 *
 * - remaining: limit minus the counted requests, this one included.
 * - resetSeconds: until the oldest counted request stops counting, i.e. until `remaining` next grows.
 * - retryAfterSeconds (refused): until enough counted requests have aged out for one more to pass;
 *   equal to resetSeconds when the limit is unchanged.
 */

/** Whole seconds that cover `ms` (never less than 1: a header of 0 would invite an immediate retry). */
export function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
