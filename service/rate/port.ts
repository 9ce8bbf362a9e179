/**
 * Per-key rate protection shared by REST and MCP: one budget per key id
 * over both surfaces together.
 */
export type RateDecision =
  | { ok: true; limit: number; remaining: number; /** seconds until the window resets */ resetSeconds: number }
  | { ok: false; reason: 'limited'; limit: number; remaining: 0; resetSeconds: number; retryAfterSeconds: number }
  /** The limiter's store (Redis) could not be reached: basic reads go on unlimited, protected ones are refused with 503. */
  | { ok: false; reason: 'unavailable' };

export interface RateLimiter {
  /**
   * Counts one request for this key id (never the raw key) and says whether it may proceed.
   * `limit` replaces the configured one for this bucket (a separate budget keyed apart).
   */
  consume(keyId: string, limit?: number): Promise<RateDecision>;
  /** Whether the limiter's store answers now (always true in-process); /readyz reports it. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
