import type { EventLog, SubscriptionState } from '../eventstore/port.ts';
import type { CommitFeedState } from '../readmodels/commit-signal.ts';
import type { ReadStore } from '../readmodels/port.ts';
import type { LoopStatus } from './background.ts';

/**
 * What /healthz and /readyz answer (outside /v1, unauthenticated, not rate-limited).
 * Only fixed words are reported, never the underlying error: the endpoint is public and store
 * errors can name hosts.
 */
export type CheckStatus = 'ok' | 'unreachable';

/**
 * `ready`: everything works. `degraded`: the instance still serves reads from its read store, but
 * something it depends on is failing (the event log, the rate limiter's Redis, a background loop
 * retrying); it stays in rotation (HTTP 200). `not_ready`: the read store cannot be reached, so it
 * can serve nothing (HTTP 503).
 */
export type ReadinessStatus = 'ready' | 'degraded' | 'not_ready';

export type Readiness = {
  /** False only when `status` is `not_ready`: what an orchestrator should act on. */
  ready: boolean;
  status: ReadinessStatus;
  checks: {
    eventLog: CheckStatus;
    readStore: CheckStatus;
    /** Present when a limiter was handed over; `degraded` while its Redis cannot be reached. */
    rateLimiter?: 'ok' | 'degraded';
    /**
     * The event log's live subscription (KurrentDB), which wakes waiting projectors and reads:
     * `reconnecting` makes the instance degraded (waits end only at their timeouts meanwhile).
     */
    eventLogSubscription?: SubscriptionState;
    /**
     * The read store's feed of every process's commits (MongoDB change stream), which wakes
     * long-polls: while it is `reconnecting` they poll the store instead (not degraded).
     */
    commitFeed?: Exclude<CommitFeedState, 'none'>;
  };
  /** The background loops this process runs (projectors, thesis reader …) and their states. */
  background: Record<string, LoopStatus>;
  /** Head position minus each collection's checkpoint; null when either side could not be read. */
  lag: Record<string, number | null>;
  /**
   * Why the status is not `ready`, in fixed words (empty when it is): `readStore: unreachable`,
   * `eventLog: unreachable`, `rateLimiter: degraded`, or a retrying loop and its reason
   * (`projector:projects: disk_full`).
   */
  reasons: string[];
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
  /** The states of this process's supervised background loops (none when not given). */
  background?: () => Record<string, LoopStatus>;
  /** The state of the read store's store-wide commit feed ('none' or absent: it has none). */
  commitFeed?: () => CommitFeedState;
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
        probe(
          () => Promise.all((collections.length > 0 ? collections : ['readyz']).map(async (c) => store.checkpoint(c))),
          timeoutMs,
        ),
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
      if (limiterUp !== undefined) checks.rateLimiter = limiterUp.ok && limiterUp.value ? 'ok' : 'degraded';
      const subscription = log.subscriptionState?.();
      if (subscription !== undefined) checks.eventLogSubscription = subscription;
      const feed = options.commitFeed?.();
      if (feed !== undefined && feed !== 'none') checks.commitFeed = feed;
      const background = options.background?.() ?? {};

      // Reads and access come from the read store, so only its loss takes the instance out of rotation.
      const status: ReadinessStatus =
        checks.readStore !== 'ok'
          ? 'not_ready'
          : checks.eventLog !== 'ok' ||
              checks.rateLimiter === 'degraded' ||
              checks.eventLogSubscription === 'reconnecting' ||
              Object.values(background).some((loop) => loop.state === 'retrying')
            ? 'degraded'
            : 'ready';
      const reasons: string[] = [];
      for (const check of ['readStore', 'eventLog', 'rateLimiter'] as const) {
        if (checks[check] !== undefined && checks[check] !== 'ok') reasons.push(`${check}: ${checks[check]}`);
      }
      for (const [name, loop] of Object.entries(background)) {
        if (loop.state === 'retrying') reasons.push(`${name}: ${loop.reason ?? 'error'}`);
      }
      return { ready: status !== 'not_ready', status, checks, background, lag, reasons };
    },
  };
}
