import { storageFaultOf, type StorageFaultKind } from '../config/storage-fault.ts';
import { EventLogUnavailableError } from '../eventstore/port.ts';
import { errorFields } from './thesis/logger.ts';

/**
 * Keeps a background loop (a projector runner's `run`, the thesis reader) alive through store
 * failures. A loop that rejects is restarted after a capped exponential backoff with jitter, its
 * state is reported (for /readyz), and a line is logged only when that state changes: once when
 * it starts failing, once when it has recovered, never once per retry.
 */

/** `running`: doing its work; `retrying`: failed and waiting to start again; `stopped`: asked to stop. */
export type LoopState = 'running' | 'retrying' | 'stopped';

export type LoopStatus = {
  state: LoopState;
  /** Failures since it last ran cleanly (0 while running). */
  failures: number;
  /** When it entered this state (ISO 8601). */
  since: string;
  /**
   * While `retrying`: why, in fixed words (never the error's message): a storage fault's kind
   * (`disk_full`, `io_error` …), `unavailable` for an event log that does not answer, else `error`.
   */
  reason?: LoopFailure;
};

export type LoopFailure = StorageFaultKind | 'unavailable' | 'error';

/** What a failed attempt is reported as; the newest attempt's cause wins (a disk can fill meanwhile). */
export function loopFailureOf(error: unknown): LoopFailure {
  const fault = storageFaultOf(error);
  if (fault !== null) return fault;
  return error instanceof EventLogUnavailableError ? 'unavailable' : 'error';
}

/** Time as the supervisor sees it; tests pass a manual clock and drive it by hand. */
export type BackgroundClock = {
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
};

export type BackgroundLogger = {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
};

export type BackoffPolicy = {
  /** Delay before the first restart. */
  baseMs: number;
  /** No delay grows beyond this. */
  capMs: number;
  /** A restarted loop that has not failed for this long counts as recovered. */
  recoveredAfterMs: number;
};

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 250, capMs: 30_000, recoveredAfterMs: 5_000 };

export type SupervisorOptions = {
  /** Stops every loop (each is handed this signal) and ends supervision. */
  signal: AbortSignal;
  backoff?: Partial<BackoffPolicy>;
  clock?: BackgroundClock;
  logger?: BackgroundLogger;
  /** In [0, 1); the jitter's source (tests make it fixed). */
  random?: () => number;
  /** Called on every state change, after it is recorded. */
  onChange?: (name: string, status: LoopStatus) => void;
};

export type Supervisor = {
  /** Runs `loop` until the signal aborts, restarting it after each failure; resolves once stopped. */
  supervise(name: string, loop: (signal: AbortSignal) => Promise<void>): Promise<void>;
  /** Every supervised loop's current status, by name. */
  status(): Record<string, LoopStatus>;
};

export const systemClock: BackgroundClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    }),
};

const stderrLogger: BackgroundLogger = {
  info(fields, message) {
    process.stderr.write(`${JSON.stringify({ level: 'info', msg: message, ...fields })}\n`);
  },
  warn(fields, message) {
    process.stderr.write(`${JSON.stringify({ level: 'warn', msg: message, ...fields })}\n`);
  },
};

/**
 * "Equal jitter": half the exponential delay fixed, half random, so restarts of many processes
 * spread out while no restart comes sooner than half the intended delay.
 */
export function backoffDelay(failures: number, policy: BackoffPolicy, random: () => number): number {
  const exponential = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, failures - 1));
  return exponential / 2 + (random() * exponential) / 2;
}

type Outcome = { kind: 'failed'; error: unknown } | { kind: 'ended' } | { kind: 'quiet' };

export function createSupervisor(options: SupervisorOptions): Supervisor {
  const policy: BackoffPolicy = { ...DEFAULT_BACKOFF, ...options.backoff };
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? stderrLogger;
  const random = options.random ?? Math.random;
  const { signal } = options;
  const statuses = new Map<string, LoopStatus>();

  function record(name: string, state: LoopState, failures: number, reason?: LoopFailure): void {
    const since = new Date(clock.now()).toISOString();
    const status: LoopStatus = { state, failures, since, ...(reason ? { reason } : {}) };
    statuses.set(name, status);
    options.onChange?.(name, status);
  }

  /** Runs one attempt; once it has outlived the quiet period after a failure, reports `quiet` (the loop keeps running). */
  async function watch(attempt: Promise<void>, failures: number): Promise<Outcome> {
    const settled: Promise<Outcome> = attempt.then(
      () => ({ kind: 'ended' }),
      (error: unknown) => ({ kind: 'failed', error }),
    );
    if (failures === 0) return settled;
    const quietTimer = new AbortController();
    const quiet = clock
      .sleep(policy.recoveredAfterMs, AbortSignal.any([quietTimer.signal, signal]))
      .then((): Outcome => ({ kind: 'quiet' }));
    const first = await Promise.race([settled, quiet]);
    quietTimer.abort();
    return first;
  }

  return {
    async supervise(name, loop) {
      let failures = 0;
      record(name, 'running', 0);
      while (!signal.aborted) {
        // A loop may throw synchronously; that is a failure like any other.
        const attempt = Promise.resolve().then(() => loop(signal));
        let outcome = await watch(attempt, failures);
        if (outcome.kind === 'quiet') {
          logger.info({ loop: name, failures }, 'background loop recovered');
          failures = 0;
          record(name, 'running', 0);
          outcome = await watch(attempt, 0);
        }
        if (signal.aborted) break;
        failures += 1;
        const reason = outcome.kind === 'failed' ? loopFailureOf(outcome.error) : 'error';
        const previous = statuses.get(name)!;
        if (failures === 1 || reason !== previous.reason) {
          // Logged again only when the cause changes (a store that was unreachable now has a full disk).
          const cause =
            outcome.kind === 'failed' ? errorFields(outcome.error) : { errorName: 'ended without being stopped' };
          logger.warn({ loop: name, reason, ...cause }, 'background loop failed; retrying with backoff');
        }
        if (failures === 1) record(name, 'retrying', failures, reason);
        else if (reason !== previous.reason) {
          // A new cause is a change worth passing on (a worker thread's statuses reach /readyz that way).
          const status: LoopStatus = { ...previous, failures, reason };
          statuses.set(name, status);
          options.onChange?.(name, status);
        } else {
          // Still failing the same way: counted for /readyz, not logged again.
          statuses.set(name, { ...previous, failures });
        }
        await clock.sleep(backoffDelay(failures, policy, random), signal);
      }
      record(name, 'stopped', failures);
    },

    status: () => Object.fromEntries(statuses),
  };
}
