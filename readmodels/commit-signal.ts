import type { ReadStore } from './port.ts';

/** Told of every commit that applied: the collection and the checkpoint it now has. */
export type CommitListener = (collection: string, checkpoint: number) => void;

/**
 * A process's commit signals: the projectors' commits (in this thread, or posted by the projector
 * worker) are emitted here once, and every subscriber (the live waits of the service) hears each.
 */
export type CommitSignals = {
  emit: CommitListener;
  /** Returns the unsubscribe function. */
  subscribe(listener: CommitListener): () => void;
};

export function createCommitSignals(): CommitSignals {
  const listeners = new Set<CommitListener>();
  return {
    emit(collection, checkpoint) {
      for (const listener of listeners) {
        // A listener's failure is its own; the commit has applied whatever it does.
        try {
          listener(collection, checkpoint);
        } catch {
          /* ignored on purpose */
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
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
    list: (collection, query) => store.list(collection, query),
    count: (collection, facets) => store.count(collection, facets),
    listKeyset: (collection, query) => store.listKeyset(collection, query),
    delta: (collection, query) => store.delta(collection, query),
    clear: () => store.clear(),
    close: () => store.close(),
  };
}
