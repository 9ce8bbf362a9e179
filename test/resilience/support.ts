import type { EventLog } from '../../eventstore/port.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import type { BackgroundClock, LoopStatus } from '../../service/background.ts';

/** A clock the test moves by hand; every sleep registered is queued for `nextSleep`, in order. */
export function manualClock(start = Date.UTC(2026, 10, 22)) {
  let now = start;
  const timers = new Set<{ at: number; resolve: () => void }>();
  const registered: number[] = [];
  let taken = 0;
  let wake: (() => void) | null = null;
  const clock: BackgroundClock = {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const timer = { at: now + ms, resolve };
        timers.add(timer);
        signal.addEventListener('abort', () => timers.delete(timer) && resolve(), { once: true });
        registered.push(ms);
        wake?.();
      }),
  };
  return {
    clock,
    /** Resolves with the length of the next sleep not yet taken, waiting for it to be registered. */
    async nextSleep(): Promise<number> {
      while (taken >= registered.length) await new Promise<void>((resolve) => (wake = resolve));
      return registered[taken++]!;
    },
    advance(ms: number) {
      now += ms;
      for (const timer of [...timers]) {
        if (timer.at <= now) {
          timers.delete(timer);
          timer.resolve();
        }
      }
    },
  };
}

/** Records every state change and lets a test wait for a given one. */
export function stateLog() {
  const changes: { name: string; state: LoopStatus['state'] }[] = [];
  const waiters: { match: (name: string, state: string) => boolean; resolve: () => void }[] = [];
  return {
    changes,
    onChange(name: string, status: LoopStatus) {
      changes.push({ name, state: status.state });
      for (const waiter of [...waiters]) {
        if (waiter.match(name, status.state)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    },
    /** Resolves when `name` (or any loop, for '*') enters `state`, counting changes already seen. */
    until(name: string, state: LoopStatus['state']): Promise<void> {
      const match = (n: string, s: string) => (name === '*' || n === name) && s === state;
      if (changes.some((c) => match(c.name, c.state))) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
    /** Resolves once the latest change recorded for `name` is `state`. */
    async settled(name: string, state: LoopStatus['state']): Promise<void> {
      while (changes.findLast((c) => c.name === name)?.state !== state) await this.next(name, state);
    },
    /** Resolves at the next time `name` enters `state`, ignoring earlier changes. */
    next(name: string, state: LoopStatus['state']): Promise<void> {
      const match = (n: string, s: string) => n === name && s === state;
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

export type Fault = 'before' | 'after';

/**
 * A switchable fault in front of a read store's commit: `before` refuses the write (nothing is
 * stored), `after` stores it and then reports a failure (as a server can after a lost reply), the
 * case where a retry could apply a batch twice. `onCommit` sees every commit that got through.
 */
export function flakyReadStore(inner: ReadStore) {
  const state: { fault: Fault | null; failures: number; commits: number; onCommit?: () => void } = {
    fault: null,
    failures: 0,
    commits: 0,
  };
  const store: ReadStore = {
    // Methods the port may gain later pass straight through.
    ...inner,
    checkpoint: (collection) => inner.checkpoint(collection),
    get: (collection, id) => inner.get(collection, id),
    getMany: (collection, ids) => inner.getMany(collection, ids),
    findIds: (collection, key, value, limit) => inner.findIds(collection, key, value, limit),
    list: (collection, query) => inner.list(collection, query),
    count: (collection, facets) => inner.count(collection, facets),
    listKeyset: (collection, query) => inner.listKeyset(collection, query),
    delta: (collection, query) => inner.delta(collection, query),
    clear: () => inner.clear(),
    close: () => inner.close(),
    async commit(collection, writes, checkpoint, expected) {
      if (state.fault === 'before') {
        state.failures += 1;
        throw Object.assign(new Error('injected: store unreachable'), { code: 'ECONNREFUSED' });
      }
      const outcome = await inner.commit(collection, writes, checkpoint, expected);
      if (state.fault === 'after') {
        state.failures += 1;
        throw Object.assign(new Error('injected: reply lost'), { code: 'ECONNRESET' });
      }
      state.commits += 1;
      state.onCommit?.();
      return outcome;
    },
  };
  return { store, state };
}

/** An event log whose reads fail while `failing` is set (appends still work: ingest is another process). */
export function flakyEventLog(inner: EventLog) {
  const state = { failing: false, failures: 0 };
  const guard = <T>(work: () => Promise<T>): Promise<T> => {
    if (!state.failing) return work();
    state.failures += 1;
    return Promise.reject(Object.assign(new Error('injected: event log unavailable'), { code: 'UNAVAILABLE' }));
  };
  const log: EventLog = {
    ...inner,
    archiveId: () => inner.archiveId(),
    append: (stream, events, expected) => inner.append(stream, events, expected),
    readStream: (stream, options) => guard(() => inner.readStream(stream, options)),
    streamRevision: (stream) => guard(() => inner.streamRevision(stream)),
    readAll: (options) => guard(() => inner.readAll(options)),
    headPosition: () => inner.headPosition(),
    waitForAppend: (after, timeoutMs, signal) => inner.waitForAppend(after, timeoutMs, signal),
    close: () => inner.close(),
  };
  return { log, state };
}
