/**
 * One live subscription to the log per EventLog ("subscribe to the whole log"), fanned
 * out to every waiter through an EventEmitter, instead of each waiter polling the head.
 *
 * It opens lazily (a process that never waits never subscribes). When the server drops it, it
 * reopens after a capped exponential backoff with jitter; once open again it wakes every waiter,
 * because appends made while it was down were never delivered and each waiter must look again.
 * The server side (a KurrentDB $all subscription, a PostgreSQL LISTEN connection) is behind
 * `SubscriptionSource`, so the rules here are tested with a fake source and a fake timer
 * (test/contract/eventlog.kurrentdb.test.ts).
 */
import type { EventEmitter } from 'node:events';
import type { SubscriptionState } from './port.ts';

export type SubscriptionHandlers = {
  /** The server accepted the subscription: every later append will be delivered. */
  confirmed(): void;
  /** A user event at this port position was appended. */
  appended(position: number): void;
  /** The subscription ended or failed; it delivers nothing more. */
  failed(error: unknown): void;
};

export type SubscriptionSource = {
  open(handlers: SubscriptionHandlers): { close(): Promise<void> };
};

export type AppendSubscriptionState = SubscriptionState;

export type AppendSubscriptionOptions = {
  /** Receives ('append', position) for every delivered event, and a wake-up for all after a reconnect. */
  signals: EventEmitter;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** [0, 1); replaced in tests. */
  random?: () => number;
  /** Schedules a reopen; replaced in tests. The returned function cancels it. */
  schedule?: (run: () => void, delayMs: number) => () => void;
  /** Called on every change of state (for logs and readiness), with the error that caused it if any. */
  onState?: (state: AppendSubscriptionState, error?: unknown) => void;
};

export type AppendSubscription = {
  /** Opens the subscription if needed; resolves once it is live, or at once if it is not (waiters then read the head and sleep). */
  ready(): Promise<void>;
  state(): AppendSubscriptionState;
  close(): Promise<void>;
};

/** Wakes every waiter whatever position it waits past: "an event may exist". */
export const WAKE_ALL = Number.MAX_SAFE_INTEGER;

const defaultSchedule = (run: () => void, delayMs: number): (() => void) => {
  const timer = setTimeout(run, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
};

/** The delay before reopen attempt `attempt` (0-based): doubling from base, capped, with half of it random. */
export function reconnectDelay(attempt: number, baseDelayMs: number, maxDelayMs: number, random: () => number): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

export function createAppendSubscription(
  source: SubscriptionSource,
  options: AppendSubscriptionOptions,
): AppendSubscription {
  const { signals } = options;
  const baseDelayMs = options.baseDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  const random = options.random ?? Math.random;
  const schedule = options.schedule ?? defaultSchedule;
  let state: AppendSubscriptionState = 'idle';
  let failures = 0;
  let current: { close(): Promise<void> } | undefined;
  let cancelReopen: (() => void) | undefined;
  /** Resolved when the pending open settles (live or failed). */
  let settled: Promise<void> = Promise.resolve();

  const setState = (next: AppendSubscriptionState, error?: unknown) => {
    if (next === state) return;
    state = next;
    options.onState?.(next, error);
  };

  function open(): void {
    const reopening = state === 'reconnecting';
    setState(reopening ? 'reconnecting' : 'connecting');
    let done!: () => void;
    settled = new Promise<void>((resolve) => {
      done = resolve;
    });
    let ended = false;
    const handlers: SubscriptionHandlers = {
      confirmed() {
        if (ended || state === 'closed') return;
        failures = 0;
        setState('live');
        done();
        if (reopening) signals.emit('append', WAKE_ALL);
      },
      appended(position) {
        if (!ended && state !== 'closed') signals.emit('append', position);
      },
      failed(error) {
        if (ended || state === 'closed') return;
        ended = true;
        current = undefined;
        done();
        setState('reconnecting', error);
        const delay = reconnectDelay(failures, baseDelayMs, maxDelayMs, random);
        failures += 1;
        cancelReopen = schedule(() => {
          cancelReopen = undefined;
          if (state !== 'closed') open();
        }, delay);
      },
    };
    try {
      current = source.open(handlers);
    } catch (error) {
      handlers.failed(error);
    }
  }

  return {
    async ready() {
      if (state === 'closed' || state === 'live') return;
      if (state === 'idle') open();
      // While reconnecting, waiters do not wait for the server: they read the head (which fails
      // with the port's error if the server is down) and are woken when the subscription is back.
      if (state === 'connecting') await settled;
    },
    state: () => state,
    async close() {
      if (state === 'closed') return;
      setState('closed');
      cancelReopen?.();
      const closing = current;
      current = undefined;
      await closing?.close();
    },
  };
}
