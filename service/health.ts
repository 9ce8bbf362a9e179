import type { EventLog } from '../eventstore/port.ts';
import type { ReadStore } from '../readmodels/port.ts';

/**
 * What /healthz and /readyz answer (outside /v1, unauthenticated, not rate-limited).
 * Only 'ok' or 'unreachable' is reported, never the underlying error: the endpoint is public
 * and store errors can name hosts.
 */
export type CheckStatus = 'ok' | 'unreachable';

export type Readiness = {
  ready: boolean;
  checks: {
    eventLog: CheckStatus;
    readStore: CheckStatus;
    /** Present when a limiter was handed over (the lead passes the Redis one when REDIS_URL is set). */
    rateLimiter?: CheckStatus;
  };
  /** Head position minus each collection's checkpoint; null when either side could not be read. */
  lag: Record<string, number | null>;
};

export type Health = {
  live(): { status: 'ok' };
  ready(): Promise<Readiness>;
};

export type HealthOptions = {
  log: EventLog;
  store: ReadStore;
  /** The projected collections whose lag is reported. */
  collections: string[];
  limiter?: { ping(): Promise<boolean> };
  /** A probe that has not answered by then counts as unreachable, so /readyz itself never hangs. */
  probeTimeoutMs?: number;
};

type Probe<T> = { ok: true; value: T } | { ok: false };

function probe<T>(run: () => Promise<T>, timeoutMs: number): Promise<Probe<T>> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ok: false }), timeoutMs);
    const settle = (result: Probe<T>) => {
      clearTimeout(timer);
      resolve(result);
    };
    // run() may throw synchronously (e.g. a closed SQLite handle) or reject: both are unreachable.
    Promise.resolve()
      .then(run)
      .then(
        (value) => settle({ ok: true, value }),
        () => settle({ ok: false }),
      );
  });
}

export function createHealth(options: HealthOptions): Health {
  const timeoutMs = options.probeTimeoutMs ?? 2000;
  const { log, store, collections, limiter } = options;

  return {
    live: () => ({ status: 'ok' }),

    async ready() {
      const [head, checkpoints, limiterUp] = await Promise.all([
        probe(() => log.headPosition(), timeoutMs),
        // With no collections named, still prove the store answers.
        probe(() => Promise.all((collections.length > 0 ? collections : ['readyz']).map((c) => store.checkpoint(c))), timeoutMs),
        limiter ? probe(() => limiter.ping(), timeoutMs) : Promise.resolve(undefined),
      ]);

      const lag: Record<string, number | null> = {};
      collections.forEach((collection, i) => {
        lag[collection] = head.ok && checkpoints.ok ? Math.max(0, head.value - checkpoints.value[i]!) : null;
      });

      const checks: Readiness['checks'] = {
        eventLog: head.ok ? 'ok' : 'unreachable',
        readStore: checkpoints.ok ? 'ok' : 'unreachable',
      };
      if (limiterUp !== undefined) checks.rateLimiter = limiterUp.ok && limiterUp.value ? 'ok' : 'unreachable';

      return { ready: Object.values(checks).every((status) => status === 'ok'), checks, lag };
    },
  };
}
