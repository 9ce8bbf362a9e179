import { errors, type ServiceError } from '../errors.ts';
import type { RateDecision, RateLimiter } from './port.ts';

/**
 * How an operation behaves when rate protection is unavailable (spec §1.10, §4, DESIGN §6):
 * `basic` reads (board, delta, plain project read, pulse) go on unlimited; `protected` ones
 * (call records, search, include=context, research submissions, thesis feed) answer 503.
 */
export type Protection = 'basic' | 'protected';

/** `headers` is complete: the transport sets every header in it, on success and on refusal. */
export type GateResult =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; error: ServiceError; headers: Record<string, string> };

export type RateGate = { check(keyId: string, protection: Protection): Promise<GateResult> };

/** The one per-key budget in front of every authenticated operation, REST and MCP alike. */
export function createRateGate(limiter: RateLimiter): RateGate {
  return {
    async check(keyId, protection): Promise<GateResult> {
      let decision: RateDecision;
      try {
        decision = await limiter.consume(keyId);
      } catch {
        // The port promises no throw; if an adapter breaks that, degrade exactly as for a down store.
        decision = { ok: false, reason: 'unavailable' };
      }

      if (decision.ok) {
        return {
          ok: true,
          headers: {
            'RateLimit-Limit': String(decision.limit),
            'RateLimit-Remaining': String(decision.remaining),
            'RateLimit-Reset': String(decision.resetSeconds),
          },
        };
      }
      if (decision.reason === 'limited') {
        return {
          ok: false,
          error: errors.rateLimited(decision.retryAfterSeconds),
          headers: {
            'RateLimit-Limit': String(decision.limit),
            'RateLimit-Remaining': '0',
            'RateLimit-Reset': String(decision.resetSeconds),
            'Retry-After': String(decision.retryAfterSeconds),
          },
        };
      }
      if (protection === 'basic') return { ok: true, headers: {} };
      const error = errors.rateProtectionDown();
      return { ok: false, error, headers: { 'Retry-After': String(error.retryAfter ?? 60) } };
    },
  };
}
