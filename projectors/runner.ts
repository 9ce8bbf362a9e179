import { subscribeAll, type EventLog, type RecordedEvent } from '../eventstore/port.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import type { Entity, Projector } from './projector.ts';

export type ProjectorRunner = {
  /** Applies everything the log holds now; resolves with the number of events applied. */
  catchUp(): Promise<number>;
  /** Follows the log until the signal aborts. */
  run(signal: AbortSignal): Promise<void>;
};

type RunnerOptions = { batchSize?: number; onBatch?: (info: { collection: string; checkpoint: number; applied: number }) => void };

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
    const docChanged = !before || JSON.stringify(before.doc) !== JSON.stringify(next.doc);
    changed.set(id, {
      id,
      doc: next.doc,
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

/** One ordered writer per collection: batches, folds, and commits writes with the checkpoint. */
export function createProjectorRunner(
  log: EventLog,
  store: ReadStore,
  projector: Projector,
  options: RunnerOptions = {},
): ProjectorRunner {
  const batchSize = options.batchSize ?? 1000;

  async function applyBatch(events: RecordedEvent[]): Promise<void> {
    const ids = [...new Set(events.map((e) => projector.keyOf(e)).filter((id): id is string => id !== null))];
    const existing = await store.getMany(projector.collection, ids);
    const changed = foldEvents(projector, existing, events);
    const checkpoint = events[events.length - 1]!.position;
    await store.commit(projector.collection, [...changed.values()], checkpoint);
    options.onBatch?.({ collection: projector.collection, checkpoint, applied: events.length });
  }

  return {
    async catchUp() {
      let applied = 0;
      for (;;) {
        const after = await store.checkpoint(projector.collection);
        const events = await log.readAll({ afterPosition: after, typePrefixes: projector.typePrefixes, limit: batchSize });
        if (events.length === 0) return applied;
        await applyBatch(events);
        applied += events.length;
      }
    },

    async run(signal: AbortSignal) {
      const after = await store.checkpoint(projector.collection);
      for await (const events of subscribeAll(log, { afterPosition: after, typePrefixes: projector.typePrefixes, batchSize, signal })) {
        await applyBatch(events);
      }
    },
  };
}
