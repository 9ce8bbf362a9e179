import { randomUUID } from 'node:crypto';
import { createCommitSignals } from '../commit-signal.ts';
import type { DeltaQuery, KeysetQuery, ListQuery, ReadStore } from '../port.ts';
import type { GenerationSpace, Refusal } from './port.ts';

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
  /** Checks the pointer now; a timer also does so every `pollMs` (every `fallbackPollMs` while a pointer feed is live). */
  refresh(): Promise<void>;
  /** Closes every open generation and the space. */
  close(): Promise<void>;
};

type Slot = { generation: number; store: ReadStore; retire: AbortController; writers: number };

export type GenerationalOptions = {
  /** Collections whose checkpoints decide when reads may move to a newer generation. */
  collections: readonly string[];
  pollMs?: number;
  /**
   * Where the space has a pointer feed (PostgreSQL NOTIFY, MongoDB change stream) and it is live, the
   * pointer is read on each notice and otherwise only this often (a notice can be lost with its connection).
   */
  fallbackPollMs?: number;
  /** Problems met while following the pointer (the serving generation stays as it is). */
  onProblem?: (message: string) => void;
};

export type OpenGenerational = { ok: true; value: GenerationalReadStore } | Refusal;

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

type OpenedLive = { ok: true; generation: number; store: ReadStore } | Refusal;

/**
 * Opens the live generation and announces it before reading the pointer again: a replay switches
 * the pointer first and then looks for users of the old generation, so either it sees this
 * announcement or this second read sees its switch (and the newer generation is opened instead).
 */
async function openLive(space: GenerationSpace, instance: string): Promise<OpenedLive> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const pointer = await space.readPointer();
    if (!pointer.ok) return pointer;
    const { generation } = pointer;
    if (generation > 0 && !(await space.exists(generation))) {
      const again = await space.readPointer();
      if (again.ok && again.generation !== generation) continue;
      return {
        ok: false,
        reason: `${space.pointerLabel} names generation ${generation}, but ${space.label(generation)} is missing; run 'pulseboard replay' to rebuild the read models`,
      };
    }
    const store = space.open(generation);
    await space.announce(instance, [generation]);
    const after = await space.readPointer();
    if (after.ok && after.generation === generation) return { ok: true, generation, store };
    await store.close().catch(() => undefined);
  }
  return { ok: false, reason: `the live read-model generation (${space.pointerLabel}) keeps changing; try again` };
}

/**
 * A read store across generations, for a process that keeps running while `pulseboard replay`
 * switches generations underneath it. Reads cost one field lookup more than the plain adapter.
 * The pointer is checked every `pollMs` (one stat call embedded), or, where the space has a live pointer
 * feed and reads are not waiting to move, on each notice and every `fallbackPollMs`; the timer also runs
 * as often as the space's announcements must be renewed (MongoDB). Takes ownership of `space`.
 */
export async function openGenerationalReadStore(
  space: GenerationSpace,
  options: GenerationalOptions,
): Promise<OpenGenerational> {
  const instance = randomUUID();
  let opened: OpenedLive;
  try {
    opened = await openLive(space, instance);
  } catch (error) {
    opened = { ok: false, reason: `cannot open the read models: ${describe(error)}` };
  }
  if (!opened.ok) {
    await space.close().catch(() => undefined);
    return opened;
  }
  const pollMs = options.pollMs ?? 200;
  const fallbackPollMs = options.fallbackPollMs ?? 30_000;
  const idleTickMs = Math.min(fallbackPollMs, space.announceEveryMs ?? fallbackPollMs);
  const pointerFeed = space.pointerFeed ? createCommitSignals(space.pointerFeed()) : undefined;
  // Whether the pointer must be read at the next check (a notice, the feed going live or down, a caller).
  let pointerMoved = true;
  let pointerReadAt = 0;
  const report = options.onProblem ?? ((message: string) => process.stderr.write(`read models: ${message}\n`));
  const slots = new Set<Slot>();
  const slot = (generation: number, store: ReadStore): Slot => {
    const created = { generation, store, retire: new AbortController(), writers: 0 };
    slots.add(created);
    return created;
  };
  let serving = slot(opened.generation, opened.store);
  let newest = serving;
  // Unknown until the first check, which therefore reads the pointer once more: a switch between
  // opening and that check is not missed.
  let stamp = '';
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
      // Its data may already be removed by the replay that retired it; closing is best effort.
      s.store.close().catch(() => undefined);
    }
  }

  async function caughtUp(candidate: Slot, current: Slot): Promise<boolean> {
    for (const collection of options.collections) {
      const ahead = await candidate.store.checkpoint(collection, { fresh: true });
      let behind = 0;
      try {
        behind = await current.store.checkpoint(collection, { fresh: true });
      } catch {
        // Only a positive answer moves reads: the old generation is gone, not merely unreadable for now
        // (a transient error would otherwise move reads to a newer generation that may be behind).
        return (await space.exists(current.generation).catch(() => true)) === false;
      }
      if (ahead < behind) return false;
    }
    return true;
  }

  async function follow(): Promise<void> {
    if (closed) return;
    const feedLive = pointerFeed?.complete() === true;
    if (!feedLive || pointerMoved || Date.now() - pointerReadAt >= fallbackPollMs) {
      pointerMoved = false;
      pointerReadAt = Date.now();
      await followPointer();
    }
    if (serving !== newest && (await caughtUp(newest, serving))) serving = newest;
    sweep();
    await space.announce(
      instance,
      [...new Set([...slots].map((s) => s.generation))].sort((a, b) => a - b),
    );
  }

  async function followPointer(): Promise<void> {
    const now = await space.pointerStamp();
    if (now !== stamp) {
      const pointer = await space.readPointer();
      if (!pointer.ok) return problem(pointer.reason);
      if (pointer.generation !== newest.generation) {
        let store: ReadStore;
        try {
          store = space.open(pointer.generation);
        } catch (error) {
          return problem(`cannot open ${space.label(pointer.generation)}: ${describe(error)}`);
        }
        // Switched again while opening: leave this one and pick the newest up on the next check.
        const again = await space.readPointer();
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
  }

  let running: Promise<void> | null = null;
  const check = (): Promise<void> => {
    running ??= follow().finally(() => {
      running = null;
    });
    return running;
  };
  const refresh = (): Promise<void> => {
    pointerMoved = true;
    return check();
  };

  // One timer: quick while the pointer has no live feed or reads wait to move, slow otherwise.
  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (closed) return;
    clearTimeout(timer);
    const settled = pointerFeed?.complete() === true && serving === newest && !pointerMoved;
    timer = setTimeout(tick, settled ? idleTickMs : pollMs);
    timer.unref();
  };
  function tick(): void {
    check()
      .catch((error: unknown) => problem(describe(error)))
      .finally(schedule);
  }
  if (pointerFeed) {
    const moved = () => {
      pointerMoved = true;
      tick();
    };
    pointerFeed.subscribe(moved);
    // Live: a switch made while it was down is read now; down: back to the quick timer.
    pointerFeed.follow(moved);
  }
  schedule();

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    await pointerFeed?.close();
    await running?.catch(() => undefined);
    for (const s of slots) {
      s.retire.abort();
      await s.store.close().catch(() => undefined);
    }
    slots.clear();
    await space.withdraw(instance).catch(() => undefined);
    await space.close().catch(() => undefined);
  }

  // Each call goes to the serving generation as it is at the moment of the call.
  const reader: ReadStore = {
    // The serving generation's history (read as the store is at the moment of the call).
    get history() {
      return serving.store.history;
    },
    checkpoint: (collection, options) => serving.store.checkpoint(collection, options),
    commit: (collection, writes, checkpoint, expected) =>
      serving.store.commit(collection, writes, checkpoint, expected),
    get: <D, S>(collection: string, id: string) => serving.store.get<D, S>(collection, id),
    getMany: <D, S>(collection: string, ids: readonly string[]) => serving.store.getMany<D, S>(collection, ids),
    findIds: (collection, key, value, limit) => serving.store.findIds(collection, key, value, limit),
    findDocs: <D, S>(collection: string, key: string, value: string, limit: number) =>
      serving.store.findDocs<D, S>(collection, key, value, limit),
    findIdsMany: (collection, key, values, limit) => serving.store.findIdsMany(collection, key, values, limit),
    findKeysByPrefix: (collection, key, prefix, limit) =>
      serving.store.findKeysByPrefix(collection, key, prefix, limit),
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
