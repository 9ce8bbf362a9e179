import { errors, type ServiceError } from '../errors.ts';
import type { RateDecision, RateLimiter } from './port.ts';

/**
 * How an operation behaves when rate protection is unavailable:
 * `basic` reads (board, delta, plain project read, pulse) go on unlimited; `protected` ones
 * (call records, search, include=context, research submissions, thesis feed) answer 503.
 */
export type Protection = 'basic' | 'protected';

/**
 * Which per-key budget a request spends. `requests`: the one REST requests and MCP tool calls
 * share (PULSEBOARD_RATE_LIMIT). `protocol`: MCP messages that read no data (initialize,
 * notifications, tools/list, ping), counted apart so that connecting never spends the data budget.
 */
export type Budget = 'requests' | 'protocol';

/** The protocol budget's bucket: keyed apart from the requests bucket of the same key id. */
export const protocolBucket = (keyId: string): string => `${keyId}:protocol`;

/** The budget's window (60 requests in 60 seconds); both limiters count over it. */
const WINDOW_SECONDS = 60;

/**
 * The present RateLimit-Limit/-Remaining/-Reset and, beside them, the IETF httpapi draft's
 * structured fields: `RateLimit-Policy: "requests";q=<limit>;w=<window>` and
 * `RateLimit: "requests";r=<remaining>;t=<seconds to reset>`.
 */
function rateHeaders(limit: number, remaining: number, resetSeconds: number): Record<string, string> {
  // Names in lower case, as Fastify sends them anyway.
  return {
    'ratelimit-limit': String(limit),
    'ratelimit-remaining': String(remaining),
    'ratelimit-reset': String(resetSeconds),
    'ratelimit-policy': `"requests";q=${limit};w=${WINDOW_SECONDS}`,
    ratelimit: `"requests";r=${remaining};t=${resetSeconds}`,
  };
}

/** `headers` is complete: the transport sets every header in it, on success and on refusal. */
export type GateResult =
  { ok: true; headers: Record<string, string> } | { ok: false; error: ServiceError; headers: Record<string, string> };

export type RateGate = { check(keyId: string, protection: Protection, budget?: Budget): Promise<GateResult> };

export type RateGateOptions = {
  /** Protocol messages per key per window; unset: the requests limit. */ protocolLimit?: number;
};

/** The per-key budgets in front of every authenticated operation, REST and MCP alike. */
export function createRateGate(limiter: RateLimiter, options: RateGateOptions = {}): RateGate {
  return {
    async check(keyId, protection, budget = 'requests') {
      if (budget === 'protocol')
        return protocolOutcome(await consumeSafely(protocolBucket(keyId), options.protocolLimit));
      return requestsOutcome(await consumeSafely(keyId), protection);
    },
  };

  /** The limiter's decision; a limiter that throws or rejects is read as unavailable (the port promises neither). */
  async function consumeSafely(bucket: string, limit?: number): Promise<RateDecision> {
    try {
      return await limiter.consume(bucket, limit);
    } catch {
      return UNAVAILABLE;
    }
  }
}

const UNAVAILABLE: RateDecision = { ok: false, reason: 'unavailable' };

function requestsOutcome(decision: RateDecision, protection: Protection): GateResult {
  if (decision.ok) {
    return {
      ok: true,
      headers: rateHeaders(decision.limit, decision.remaining, decision.resetSeconds),
    };
  }
  if (decision.reason === 'limited') {
    return {
      ok: false,
      error: errors.rateLimited(decision.retryAfterSeconds),
      headers: {
        ...rateHeaders(decision.limit, 0, decision.resetSeconds),
        'retry-after': String(decision.retryAfterSeconds),
      },
    };
  }
  if (protection === 'basic') return { ok: true, headers: {} };
  const error = errors.rateProtectionDown();
  return { ok: false, error, headers: { 'retry-after': String(error.retryAfter ?? 60) } };
}

/**
 * Protocol messages read no data: when the limiter is unavailable they go on, like basic reads.
 * Their responses carry no RateLimit-* headers, which describe the requests budget.
 */
function protocolOutcome(decision: RateDecision): GateResult {
  if (decision.ok || decision.reason === 'unavailable') return { ok: true, headers: {} };
  const message =
    'Too many protocol messages (initialize, tools/list, ping, notifications) for this key; retry after the Retry-After interval.';
  return {
    ok: false,
    error: errors.rateLimited(decision.retryAfterSeconds, message),
    headers: { 'retry-after': String(decision.retryAfterSeconds) },
  };
}
