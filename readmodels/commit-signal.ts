import type { ReadStore } from './port.ts';

/** Told of every commit that applied: the collection and the checkpoint it now has. */
export type CommitListener = (collection: string, checkpoint: number) => void;

/**
 * A store-wide feed of commits, whichever process made them (MongoDB: a change stream on the
 * checkpoints). `live` once every later commit will be delivered; `failed` when it delivers no more.
 */
export type CommitFeed = {
  open(handlers: { live(): void; commit: CommitListener; failed(error: unknown): void }): { close(): Promise<void> };
};

export type CommitFeedState = 'none' | 'idle' | 'connecting' | 'live' | 'reconnecting' | 'closed';

/**
 * A process's commit signals: the projectors' commits (in this thread, or posted by the projector
 * worker) are emitted here once, and every subscriber (the live waits of the service) hears each.
 * Where the store has a store-wide feed, it is opened on the first `follow` and its commits are
 * emitted here too; while it is live, `complete` is true and waiters need not poll the store.
 */
export type CommitSignals = {
  emit: CommitListener;
  /** Returns the unsubscribe function. */
  subscribe(listener: CommitListener): () => void;
  /** Whether every commit of every process is signalled now (a live store-wide feed). */
  complete(): boolean;
  /** Opens the store-wide feed (once; nothing where there is none); `listener` hears each change of `complete`. */
  follow(listener: (complete: boolean) => void): () => void;
  /** The store-wide feed's state ('none' without one), for readiness reports. */
  feedState(): CommitFeedState;
  close(): Promise<void>;
};

export type CommitSignalOptions = {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Schedules a reopen; replaced in tests. The returned function cancels it. */
  schedule?: (run: () => void, delayMs: number) => () => void;
};

const defaultSchedule = (run: () => void, delayMs: number): (() => void) => {
  const timer = setTimeout(run, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
};

export function createCommitSignals(feed?: CommitFeed, options: CommitSignalOptions = {}): CommitSignals {
  const listeners = new Set<CommitListener>();
  const followers = new Set<(complete: boolean) => void>();
  const schedule = options.schedule ?? defaultSchedule;
  const baseDelayMs = options.baseDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  let state: CommitFeedState = feed ? 'idle' : 'none';
  let current: { close(): Promise<void> } | undefined;
  let cancelReopen: (() => void) | undefined;
  let failures = 0;

  const emit: CommitListener = (collection, checkpoint) => {
    for (const listener of listeners) {
      // A listener's failure is its own; the commit has applied whatever it does.
      try {
        listener(collection, checkpoint);
      } catch {
        /* ignored on purpose */
      }
    }
  };

  const setState = (next: CommitFeedState) => {
    const was = state === 'live';
    state = next;
    if (was !== (next === 'live')) for (const follower of followers) follower(next === 'live');
  };

  function open(): void {
    if (!feed || state === 'closed') return;
    setState(state === 'reconnecting' ? 'reconnecting' : 'connecting');
    let ended = false;
    const handlers = {
      live() {
        if (ended || state === 'closed') return;
        failures = 0;
        setState('live');
      },
      commit(collection: string, checkpoint: number) {
        if (!ended && state !== 'closed') emit(collection, checkpoint);
      },
      failed(_error: unknown) {
        if (ended || state === 'closed') return;
        ended = true;
        current = undefined;
        setState('reconnecting');
        const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(failures, 30));
        failures += 1;
        cancelReopen = schedule(
          () => {
            cancelReopen = undefined;
            open();
          },
          Math.round(ceiling / 2 + (ceiling / 2) * Math.random()),
        );
      },
    };
    try {
      current = feed.open(handlers);
    } catch (error) {
      handlers.failed(error);
    }
  }

  return {
    emit,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    complete: () => state === 'live',
    follow(listener) {
      followers.add(listener);
      if (state === 'idle') open();
      return () => followers.delete(listener);
    },
    feedState: () => state,
    async close() {
      if (state === 'none' || state === 'closed') return;
      setState('closed');
      cancelReopen?.();
      const closing = current;
      current = undefined;
      await closing?.close().catch(() => undefined);
    },
  };
}

/** `store`, announcing each commit that applied (after it applied) to `onCommit`. */
export function signalCommits(store: ReadStore, onCommit: CommitListener): ReadStore {
  return {
    async commit(collection, writes, checkpoint, expected) {
      const outcome = await store.commit(collection, writes, checkpoint, expected);
      if (outcome.ok) onCommit(collection, checkpoint);
      return outcome;
    },
    ...(store.history ? { history: store.history } : {}),
    checkpoint: (collection, options) => store.checkpoint(collection, options),
    get: (collection, id) => store.get(collection, id),
    getMany: (collection, ids) => store.getMany(collection, ids),
    findIds: (collection, key, value, limit) => store.findIds(collection, key, value, limit),
    findDocs: (collection, key, value, limit) => store.findDocs(collection, key, value, limit),
    findIdsMany: (collection, key, values, limit) => store.findIdsMany(collection, key, values, limit),
    findKeysByPrefix: (collection, key, prefix, limit) => store.findKeysByPrefix(collection, key, prefix, limit),
    list: (collection, query) => store.list(collection, query),
    count: (collection, facets) => store.count(collection, facets),
    listKeyset: (collection, query) => store.listKeyset(collection, query),
    delta: (collection, query) => store.delta(collection, query),
    clear: () => store.clear(),
    close: () => store.close(),
  };
}
