import type { EventLog, RecordedEvent } from '../eventstore/port.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import type { Entity, Projector } from './projector.ts';

export type ProjectorRunner = {
  /** Applies everything the log holds now; resolves with the number of events applied. */
  catchUp(): Promise<number>;
  /** Follows the log until the signal aborts. */
  run(signal: AbortSignal): Promise<void>;
};

export type RunnerOptions = {
  /** Log positions read per batch (default 1000; replay uses larger ones). */
  batchSize?: number;
  idleWaitMs?: number;
  /** After each collection's commit: its new checkpoint and how many events it folded. */
  onBatch?: (info: { collection: string; checkpoint: number; applied: number }) => void;
};

/**
 * Folds one batch: the documents it touches, in log order. Exported for as-of reads and tests
 * that fold a stream through the same code. Folds are copy-on-write, so a fold that returns the
 * document it was given changed nothing; any other result is compared as JSON with the document
 * before it (one stringify per changing event).
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
    const sameDoc = current !== null && next.doc === current.doc;
    const nextJson = sameDoc ? before!.json : JSON.stringify(next.doc);
    const docChanged = !before || (!sameDoc && before.json !== nextJson);
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

/** Which projectors read an event type (by their type prefixes), cached per type. */
function dispatcher(projectors: readonly Projector[]): (type: string) => readonly boolean[] {
  const cache = new Map<string, boolean[]>();
  return (type) => {
    let wanted = cache.get(type);
    if (!wanted) {
      wanted = projectors.map((p) => p.typePrefixes.some((prefix) => type.startsWith(prefix)));
      cache.set(type, wanted);
    }
    return wanted;
  };
}

/**
 * One ordered writer for a set of read models. Each step reads one batch of the log once (each
 * event parsed once) from the lowest checkpoint among them, hands every projector the events past
 * its own checkpoint whose types it reads, and commits each collection's documents with its
 * checkpoint — a compare-and-set against the checkpoint the batch started from, so a second
 * runner on the same store never makes a fold apply twice or a checkpoint move back. `catchUp`
 * and `run` share one lock and always resume from the stored checkpoints.
 */
export function createProjectionRunner(
  log: EventLog,
  store: ReadStore,
  projectors: readonly Projector[],
  options: RunnerOptions = {},
): ProjectorRunner {
  const batchSize = options.batchSize ?? 1000;
  const wants = dispatcher(projectors);
  // One projector reads only its own types; several read everything once and dispatch here.
  const typePrefixes = projectors.length === 1 ? projectors[0]!.typePrefixes : undefined;
  let lock: Promise<unknown> = Promise.resolve();

  function exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = lock.then(work, work);
    lock = next.catch(() => undefined);
    return next;
  }

  async function project(projector: Projector, after: number, checkpoint: number, events: readonly RecordedEvent[]): Promise<number> {
    const ids = new Set<string>();
    for (const event of events) {
      const id = projector.keyOf(event);
      if (id !== null) ids.add(id);
    }
    const existing = ids.size > 0 ? await store.getMany(projector.collection, [...ids]) : new Map<string, StoredDoc>();
    const changed = foldEvents(projector, existing, events);
    const committed = await store.commit(projector.collection, [...changed.values()], checkpoint, after);
    // Another writer advanced this collection since `after` was read: nothing of this batch was
    // written; the next step starts again from the checkpoint it stored.
    if (!committed.ok) return 0;
    options.onBatch?.({ collection: projector.collection, checkpoint, applied: events.length });
    return events.length;
  }

  /** One batch; `done` only when every collection had reached the head. */
  function step(): Promise<{ done: boolean; applied: number; checkpoint: number }> {
    return exclusive(async () => {
      const afters = await Promise.all(projectors.map((p) => store.checkpoint(p.collection)));
      const from = Math.min(...afters);
      const head = await log.headPosition();
      if (head <= from) return { done: true, applied: 0, checkpoint: from };
      const events = await log.readAll({
        afterPosition: from,
        toPosition: head,
        limit: batchSize,
        ...(typePrefixes ? { typePrefixes } : {}),
      });
      // A short batch means everything up to `head` was considered: checkpoints may move there
      // even past events of other types, so idle projectors do not rescan them.
      const checkpoint = events.length < batchSize ? head : events[events.length - 1]!.position;
      const perProjector: RecordedEvent[][] = projectors.map(() => []);
      for (const event of events) {
        const wanted = wants(event.type);
        for (let i = 0; i < projectors.length; i++) {
          if (wanted[i] && event.position > afters[i]!) perProjector[i]!.push(event);
        }
      }
      const applied = await Promise.all(
        projectors.map((projector, i) =>
          afters[i]! < checkpoint ? project(projector, afters[i]!, checkpoint, perProjector[i]!) : Promise.resolve(0),
        ),
      );
      return { done: false, applied: applied.reduce((sum, n) => sum + n, 0), checkpoint };
    });
  }

  return {
    async catchUp() {
      let applied = 0;
      for (;;) {
        const result = await step();
        if (result.done) return applied;
        applied += result.applied;
      }
    },

    async run(signal: AbortSignal) {
      while (!signal.aborted) {
        const result = await step();
        if (result.done) await log.waitForAppend(result.checkpoint, options.idleWaitMs ?? 250, signal);
      }
    },
  };
}

/** The runner of one read model alone (tests, and callers that need one collection brought up to date). */
export function createProjectorRunner(log: EventLog, store: ReadStore, projector: Projector, options: RunnerOptions = {}): ProjectorRunner {
  return createProjectionRunner(log, store, [projector], options);
}
