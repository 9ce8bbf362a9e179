import type { EventLog, RecordedEvent } from '../eventstore/port.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import type { Entity, Projector } from './projector.ts';

export type ProjectorRunner = {
  /** Applies everything the log holds now; resolves with the number of events applied. */
  catchUp(): Promise<number>;
  /** Follows the log until the signal aborts. */
  run(signal: AbortSignal): Promise<void>;
};

type RunnerOptions = {
  batchSize?: number;
  idleWaitMs?: number;
  onBatch?: (info: { collection: string; checkpoint: number; applied: number }) => void;
};

/**
 * Folds one batch: the documents it touches, in log order. Exported for as-of reads and tests
 * that fold a stream through the same code.
 */
export function foldEvents<D, S>(
  projector: Projector<D, S>,
  existing: Map<string, StoredDoc<D, S>>,
  events: readonly RecordedEvent[],
): Map<string, StoredDoc<D, S>> {
  const changed = new Map<string, StoredDoc<D, S>>();
  for (const event of events) {
    const id = projector.keyOf(event);
    if (id === null) continue;
    const before = changed.get(id) ?? existing.get(id) ?? null;
    const current: Entity<D, S> | null = before
      ? { doc: before.doc, state: before.state, sortKey: before.sortKey, facet: before.facet, keys: before.keys }
      : null;
    const next = projector.fold(current, event);
    if (next === null) continue;
    // Stored documents carry their JSON text, so each event costs one stringify.
    const nextJson = JSON.stringify(next.doc);
    const docChanged = !before || before.json !== nextJson;
    changed.set(id, {
      id,
      doc: next.doc,
      json: nextJson,
      state: next.state,
      // A write is a change of the public document (DESIGN §4); a state-only change keeps seq.
      seq: docChanged ? event.position : before.seq,
      writtenAt: docChanged ? event.recordedAt : before.writtenAt,
      sortKey: next.sortKey,
      facet: next.facet,
      keys: next.keys,
    });
  }
  return changed;
}

/**
 * One ordered writer per collection: batches, folds, and commits writes with the checkpoint.
 * `catchUp` and `run` share one lock and always resume from the stored checkpoint, so they never
 * apply a batch twice even when called together.
 */
export function createProjectorRunner(
  log: EventLog,
  store: ReadStore,
  projector: Projector,
  options: RunnerOptions = {},
): ProjectorRunner {
  const batchSize = options.batchSize ?? 1000;
  let lock: Promise<unknown> = Promise.resolve();

  function exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = lock.then(work, work);
    lock = next.catch(() => undefined);
    return next;
  }

  /** Applies one batch after the stored checkpoint; `applied` is 0 only when nothing was left. */
  function step(): Promise<{ applied: number; checkpoint: number }> {
    return exclusive(async () => {
      const after = await store.checkpoint(projector.collection);
      const head = await log.headPosition();
      if (head <= after) return { applied: 0, checkpoint: after };
      const events = await log.readAll({
        afterPosition: after,
        toPosition: head,
        typePrefixes: projector.typePrefixes,
        limit: batchSize,
      });
      // A short batch means everything up to `head` was considered: the checkpoint may move there
      // even past events of other types, so idle projectors do not rescan them.
      const checkpoint = events.length < batchSize ? head : events[events.length - 1]!.position;
      const ids = [...new Set(events.map((e) => projector.keyOf(e)).filter((id): id is string => id !== null))];
      const existing = ids.length > 0 ? await store.getMany(projector.collection, ids) : new Map<string, StoredDoc>();
      const changed = foldEvents(projector, existing, events);
      const committed = await store.commit(projector.collection, [...changed.values()], checkpoint, after);
      // Another writer advanced this collection since `after` was read: nothing of this batch was
      // written; the next step starts again from the checkpoint it stored.
      if (!committed.ok) return { applied: 1, checkpoint: committed.actual };
      options.onBatch?.({ collection: projector.collection, checkpoint, applied: events.length });
      return { applied: Math.max(events.length, 1), checkpoint };
    });
  }

  return {
    async catchUp() {
      let applied = 0;
      for (;;) {
        const result = await step();
        if (result.applied === 0) return applied;
        applied += result.applied;
      }
    },

    async run(signal: AbortSignal) {
      while (!signal.aborted) {
        const result = await step();
        if (result.applied === 0) await log.waitForAppend(result.checkpoint, options.idleWaitMs ?? 250, signal);
      }
    },
  };
}
