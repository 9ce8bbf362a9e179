import type { DeltaQuery, KeysetQuery, ListQuery, ReadStore } from '../port.ts';
import { generationPath, openLiveGeneration, pointerStamp, readPointer } from './generations.ts';
import { createSqliteReadStore } from './sqlite-read-store.ts';

/** One open generation, as the projectors see it: `retired` aborts once the pointer names a newer one. */
export type WriterGeneration = { generation: number; store: ReadStore; retired: AbortSignal };

export type GenerationalReadStore = {
  /**
   * The serving view. Reads go to one generation and move to a newer one only once its checkpoints
   * have reached the serving one's for every collection, so a read that spans the switch (a
   * checkpoint, then rows) never combines a high-water mark with rows that lag behind it.
   */
  reader: ReadStore;
  /** The generation the pointer names, where projectors write. `release` once done with it. */
  acquireWriter(): { generation: WriterGeneration; release(): void };
  generations(): { serving: number; newest: number };
  /** Checks the pointer now; a timer also does so every `pollMs`. */
  refresh(): Promise<void>;
  close(): Promise<void>;
};

type Slot = { generation: number; store: ReadStore; retire: AbortController; writers: number };

export type GenerationalOptions = {
  /** Collections whose checkpoints decide when reads may move to a newer generation. */
  collections: readonly string[];
  pollMs?: number;
  /** Problems met while following the pointer (the serving generation stays as it is). */
  onProblem?: (message: string) => void;
};

export type OpenGenerational = { ok: true; value: GenerationalReadStore } | { ok: false; reason: string };

/**
 * The embedded read store across generations, for a process that keeps running while
 * `pulseboard replay` switches generations underneath it. Reads cost one field lookup more than
 * the plain adapter; the pointer is checked by a timer with one stat call.
 */
export function openGenerationalReadStore(dataDir: string, options: GenerationalOptions): OpenGenerational {
  const opened = openLiveGeneration(dataDir);
  if (!opened.ok) return opened;
  const pollMs = options.pollMs ?? 200;
  const report = options.onProblem ?? ((message: string) => process.stderr.write(`read models: ${message}\n`));
  const slots = new Set<Slot>();
  const slot = (generation: number, store: ReadStore): Slot => {
    const created = { generation, store, retire: new AbortController(), writers: 0 };
    slots.add(created);
    return created;
  };
  let serving = slot(opened.generation, opened.store);
  let newest = serving;
  let stamp = pointerStamp(dataDir);
  let closed = false;
  let lastProblem = '';

  const problem = (message: string) => {
    if (message !== lastProblem) report(message);
    lastProblem = message;
  };

  function sweep(): void {
    for (const s of slots) {
      if (s === serving || s === newest || s.writers > 0) continue;
      slots.delete(s);
      // Its file may already be removed by the replay that retired it; closing is best effort.
      s.store.close().catch(() => undefined);
    }
  }

  async function caughtUp(candidate: Slot, current: Slot): Promise<boolean> {
    for (const collection of options.collections) {
      const ahead = await candidate.store.checkpoint(collection);
      let behind = 0;
      try {
        behind = await current.store.checkpoint(collection);
      } catch {
        return true; // the old generation cannot be read any more: the new one is the only choice
      }
      if (ahead < behind) return false;
    }
    return true;
  }

  async function follow(): Promise<void> {
    if (closed) return;
    const now = pointerStamp(dataDir);
    if (now !== stamp) {
      const pointer = readPointer(dataDir);
      if (!pointer.ok) return problem(pointer.reason);
      if (pointer.generation !== newest.generation) {
        const path = generationPath(dataDir, pointer.generation);
        let store: ReadStore;
        try {
          store = createSqliteReadStore(path);
        } catch (error) {
          return problem(`cannot open ${path}: ${error instanceof Error ? error.message : String(error)}`);
        }
        // Switched again while opening: leave this one and pick the newest up on the next check.
        const again = readPointer(dataDir);
        if (!again.ok || again.generation !== pointer.generation) {
          await store.close().catch(() => undefined);
          return;
        }
        const previous = newest;
        newest = slot(pointer.generation, store);
        previous.retire.abort();
      }
      stamp = now;
      lastProblem = '';
    }
    if (serving !== newest && (await caughtUp(newest, serving))) serving = newest;
    sweep();
  }

  let running: Promise<void> | null = null;
  const refresh = (): Promise<void> => {
    running ??= follow().finally(() => {
      running = null;
    });
    return running;
  };

  const timer = setInterval(() => {
    refresh().catch((error: unknown) => problem(error instanceof Error ? error.message : String(error)));
  }, pollMs);
  timer.unref();

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    await running?.catch(() => undefined);
    for (const s of slots) {
      s.retire.abort();
      await s.store.close().catch(() => undefined);
    }
    slots.clear();
  }

  // Each call goes to the serving generation as it is at the moment of the call.
  const reader: ReadStore = {
    checkpoint: (collection) => serving.store.checkpoint(collection),
    commit: (collection, writes, checkpoint) => serving.store.commit(collection, writes, checkpoint),
    get: <D, S>(collection: string, id: string) => serving.store.get<D, S>(collection, id),
    getMany: <D, S>(collection: string, ids: readonly string[]) => serving.store.getMany<D, S>(collection, ids),
    findIds: (collection, key, value, limit) => serving.store.findIds(collection, key, value, limit),
    list: <D>(collection: string, query: ListQuery) => serving.store.list<D>(collection, query),
    count: (collection, facets) => serving.store.count(collection, facets),
    listKeyset: <D>(collection: string, query: KeysetQuery) => serving.store.listKeyset<D>(collection, query),
    delta: <D>(collection: string, query: DeltaQuery) => serving.store.delta<D>(collection, query),
    clear: () => serving.store.clear(),
    close,
  };

  return {
    ok: true,
    value: {
      reader,
      acquireWriter() {
        const held = newest;
        held.writers += 1;
        let released = false;
        return {
          generation: { generation: held.generation, store: held.store, retired: held.retire.signal },
          release() {
            if (released) return;
            released = true;
            held.writers -= 1;
            sweep();
          },
        };
      },
      generations: () => ({ serving: serving.generation, newest: newest.generation }),
      refresh,
      close,
    },
  };
}
