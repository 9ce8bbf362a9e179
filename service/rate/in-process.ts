import type { RateDecision, RateLimiter } from './port.ts';
import { wholeSeconds } from './window.ts';

export type InProcessLimiterOptions = {
  limit: number;
  windowSeconds?: number;
  /** Milliseconds since the epoch; injected by tests. */
  now?: () => number;
};

export type InProcessLimiter = RateLimiter & {
  /** Keys currently holding counted requests (tests check that expired keys are dropped). */
  trackedKeys(): number;
};

/**
 * One key's sliding log (see window.ts). Requests allowed in the same millisecond share an entry,
 * so a key holds at most min(limit, window in ms) entries however high PULSEBOARD_RATE_LIMIT is set.
 * The arrays are a queue: `head` is the oldest live entry; the dead prefix is cut off once it is
 * at least half the array, which keeps removal amortised O(1).
 */
type KeyLog = { at: number[]; count: number[]; head: number; total: number };

/** The limiter used without REDIS_URL: one process, always available, same rule as the Redis one. */
export function createInProcessLimiter(options: InProcessLimiterOptions): InProcessLimiter {
  const windowMs = (options.windowSeconds ?? 60) * 1000;
  const now = options.now ?? (() => Date.now());
  const logs = new Map<string, KeyLog>();
  let lastSweep = now();

  function expire(log: KeyLog, at: number): void {
    while (log.head < log.at.length && log.at[log.head]! <= at - windowMs) {
      log.total -= log.count[log.head]!;
      log.head += 1;
    }
    if (log.head > 0 && log.head * 2 >= log.at.length) {
      log.at.splice(0, log.head);
      log.count.splice(0, log.head);
      log.head = 0;
    }
  }

  /** Keys nobody asks about again are never touched by `expire`; drop them once per window. */
  function sweep(at: number): void {
    if (at - lastSweep < windowMs) return;
    lastSweep = at;
    for (const [keyId, log] of logs) {
      expire(log, at);
      if (log.total === 0) logs.delete(keyId);
    }
  }

  function consumeNow(keyId: string, limit: number): RateDecision {
    const at = now();
    sweep(at);
    let log = logs.get(keyId);
    if (!log) {
      log = { at: [], count: [], head: 0, total: 0 };
      logs.set(keyId, log);
    }
    expire(log, at);

    if (log.total >= limit) {
      // The entry whose expiry brings the count below the limit (the oldest one unless the limit shrank).
      let toFree = log.total - limit + 1;
      let i = log.head;
      while (toFree > log.count[i]!) {
        toFree -= log.count[i]!;
        i += 1;
      }
      const seconds = wholeSeconds(log.at[i]! + windowMs - at);
      return { ok: false, reason: 'limited', limit, remaining: 0, resetSeconds: seconds, retryAfterSeconds: seconds };
    }

    const last = log.at.length - 1;
    // Same millisecond (or a clock that stepped back): count into the newest entry, keeping the log ordered.
    if (last >= log.head && log.at[last]! >= at) log.count[last]! += 1;
    else {
      log.at.push(at);
      log.count.push(1);
    }
    log.total += 1;
    return {
      ok: true,
      limit,
      remaining: limit - log.total,
      resetSeconds: wholeSeconds(log.at[log.head]! + windowMs - at),
    };
  }

  return {
    consume: async (keyId, limit = options.limit) => consumeNow(keyId, limit),
    ping: async () => true,
    close: async () => {
      logs.clear();
    },
    trackedKeys: () => logs.size,
  };
}
