import { getHeapStatistics } from 'node:v8';
import type { EventLog, RecordedEvent } from '../eventstore/port.ts';
import type { VersionWrite } from '../readmodels/history/port.ts';
import type { ClosedVersion, ReadStore, StoredDoc } from '../readmodels/port.ts';
import { jsonEqual } from './json-equal.ts';
import type { Entity, Projector } from './projector.ts';

export type ProjectorRunner = {
  /** Applies everything the log holds now; resolves with the number of events applied. */
  catchUp(): Promise<number>;
  /** Follows the log until the signal aborts. */
  run(signal: AbortSignal): Promise<void>;
};

export type RunnerOptions = {
  /**
   * At most this many log positions per commit (default 100,000): read in pages of up to 1,000,
   * folded in memory, committed together. A commit also comes as soon as the log's head is reached
   * (so a runner that keeps up commits every page) or when `maxPendingDocs` documents are held.
   */
  batchSize?: number;
  /** Documents held in memory (changed, or read for folding) before a commit (default 50,000). */
  maxPendingDocs?: number;
  /**
   * A commit also comes once the process's V8 heap holds more than this share of its limit (default
   * 0.5): a large `maxPendingDocs` then never runs the process out of memory, whatever the documents'
   * sizes. Where a batch ends changes no document (seq and writtenAt come from the events).
   */
  maxHeapShare?: number;
  /** The longest idle wait between two looks at the log when no append is signalled (default 30 s). */
  idleWaitMs?: number;
  /** After each collection's commit: its new checkpoint and how many events it folded. */
  onBatch?: (info: { collection: string; checkpoint: number; applied: number }) => void;
};

export const DEFAULT_BATCH_SIZE = 100_000;
export const DEFAULT_MAX_PENDING_DOCS = 50_000;
export const DEFAULT_MAX_HEAP_SHARE = 0.5;
/** Below this many held documents the heap is not looked at (a batch always makes some progress). */
const HEAP_CHECK_FROM_DOCS = 10_000;
/**
 * How long an idle runner sleeps when no append is signalled: a safety net only, since every
 * adapter's waitForAppend is woken by appends (from any process) and by its own reconnects.
 */
export const DEFAULT_IDLE_WAIT_MS = 30_000;
/** Before the log is read again after it answered short of its own head (a node catching up). */
const LAGGED_RETRY_MS = 100;

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

const noop = () => undefined;

/**
 * Log positions per read of the log. A page's parsed events stay alive until it is folded: small pages
 * let most die young instead of being copied by each young-generation collection (docs/scale.md).
 */
const PAGE_SIZE = 1_000;
const usedHeapBytes = () => getHeapStatistics().used_heap_size;

/**
 * Whether the V8 heap's used size passes `maxHeapBytes` (garbage included, so a batch may end early:
 * a shorter batch costs one more commit, never a lost event). Exported with its reader for tests.
 */
export function heapFull(maxHeapBytes: number, usedBytes: () => number = usedHeapBytes): boolean {
  return usedBytes() > maxHeapBytes;
}

/** What foldEvents needs of the documents already stored. */
type DocLookup<D, S> = { get(id: string): StoredDoc<D, S> | undefined };

/**
 * Folds one batch: the documents it touches, in log order. Exported for as-of reads and tests
 * that fold a stream through the same code. Folds are copy-on-write, so a fold that returns the
 * document it was given changed nothing; any other result is compared with the document before it
 * by `jsonEqual` (what comparing their JSON texts would say, without making the texts: the walk stops
 * at the values the fold left shared). A document's JSON text is made once, when first asked for
 * (by the commit), not per event. `changed` may carry documents folded by earlier batches not yet
 * committed; it is updated in place and returned. A fold that changes nothing at all (document,
 * state, sort key, facet and keys all equal) leaves a stored document out of `changed`. With `closed`, a
 * version that a later write closes moves there, and a document carries only its last one.
 */
export function foldEvents<D, S>(
  projector: Projector<D, S>,
  existing: DocLookup<D, S>,
  events: readonly RecordedEvent[],
  changed: Map<string, StoredDoc<D, S>> = new Map(),
  closed?: ClosedVersion[],
): Map<string, StoredDoc<D, S>> {
  for (const event of events) {
    const id = projector.keyOf(event);
    if (id === null) continue;
    const pending = changed.get(id);
    const before = pending ?? existing.get(id) ?? null;
    // A stored document is its own entity (folds never change what they are given).
    const current: Entity<D, S> | null = before;
    const next = projector.fold(current, event);
    if (next === null) continue;
    const docChanged = current === null || (next.doc !== current.doc && !jsonEqual(current.doc, next.doc));
    if (!docChanged && pending === undefined && unchanged(current!, next)) continue;
    // A stored document's text is at hand (no stringify) when the fold left the document as it was.
    const known = !docChanged && pending === undefined ? before!.json : undefined;
    // The batch's public writes of a versioned collection, oldest first, travel with the document to its commit.
    let versions = (pending as FoldedDoc<D, S> | undefined)?.versions;
    if (docChanged && projector.versioned?.(next.facet)) {
      const version: VersionWrite = {
        seq: event.position,
        writtenAt: event.recordedAt,
        sortKey: next.sortKey,
        facet: next.facet,
        doc: next.doc,
        sharedMember: projector.sharedMember,
      };
      if (closed !== undefined && versions !== undefined && versions.length > 0) {
        for (let i = 0; i < versions.length; i++)
          closed.push({ id, version: versions[i]!, validTo: versions[i + 1]?.seq ?? event.position });
        versions = [version];
      } else (versions ??= []).push(version);
    }
    changed.set(
      id,
      folded(
        id,
        next,
        known,
        docChanged ? event.position : before!.seq,
        docChanged ? event.recordedAt : before!.writtenAt,
        versions,
      ),
    );
  }
  return changed;
}

/** Everything but the document (already found equal) is as it was. */
function unchanged<D, S>(current: Entity<D, S>, next: Entity<D, S>): boolean {
  return (
    next.sortKey === current.sortKey &&
    next.facet === current.facet &&
    (next.state === current.state || jsonEqual(current.state, next.state)) &&
    (next.keys === current.keys || jsonEqual(current.keys, next.keys))
  );
}

/**
 * A folded document; `json` is made on first access and kept. A write is a change of the public
 * document: `seq` and `writtenAt` move only then, a state-only change keeps them.
 */
class FoldedDoc<D, S> implements StoredDoc<D, S> {
  readonly id: string;
  readonly doc: D;
  readonly state: S;
  readonly seq: number;
  readonly writtenAt: string;
  readonly sortKey: string;
  readonly facet: string;
  readonly keys: Record<string, string[]>;
  /** The public writes this batch made (versioned collections only; see DocWrite); dropped once committed. */
  versions: VersionWrite[] | undefined;
  #json: string | undefined;
  #utf8: Uint8Array | undefined;
  constructor(
    id: string,
    next: Entity<D, S>,
    known: string | undefined,
    seq: number,
    writtenAt: string,
    versions: VersionWrite[] | undefined,
  ) {
    this.id = id;
    this.doc = next.doc;
    this.state = next.state;
    this.seq = seq;
    this.writtenAt = writtenAt;
    this.sortKey = next.sortKey;
    this.facet = next.facet;
    this.keys = next.keys;
    this.versions = versions;
    this.#json = known;
  }
  get json(): string {
    this.#json ??= JSON.stringify(this.doc);
    return this.#json;
  }
  get utf8(): Uint8Array {
    this.#utf8 ??= Buffer.from(this.json, 'utf8');
    return this.#utf8;
  }
}

function folded<D, S>(
  id: string,
  next: Entity<D, S>,
  known: string | undefined,
  seq: number,
  writtenAt: string,
  versions: VersionWrite[] | undefined,
): StoredDoc<D, S> {
  return new FoldedDoc(id, next, known, seq, writtenAt, versions);
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

/** One read model's work in progress between two commits. */
type Pending = {
  projector: Projector;
  /** Its checkpoint when this batch began (stored, or set by the step's commit before): the commit's compare-and-set. */
  after: number;
  /** Documents this batch changed, to be written. */
  changed: Map<string, StoredDoc>;
  /** Documents read from the store, or carried from an earlier batch of the step, and not changed (yet). */
  read: Map<string, StoredDoc>;
  /**
   * The collection held no document when the step began (a replay into a new generation, a first
   * catch-up): nothing to read back, then or in the step's later batches (which fold from the documents
   * carried in memory), so no look-ups. A document another writer adds meanwhile moves the checkpoint
   * too, and then this step's commit is refused.
   */
  empty: boolean;
  applied: number;
};

/**
 * One ordered writer for a set of read models. Each batch reads the log once, in pages, from the
 * lowest checkpoint among them (each event parsed once), hands every projector the events past
 * its own checkpoint whose types it reads, folds them in memory, and then commits each
 * collection's changed documents with its checkpoint — a compare-and-set against the checkpoint
 * the batch began from, so a second runner on the same store never makes a fold apply twice or a
 * checkpoint move back. A document folded by several pages of one batch is written once.
 * `catchUp` and `run` share one lock and always resume from the stored checkpoints.
 */
export function createProjectionRunner(
  log: EventLog,
  store: ReadStore,
  projectors: readonly Projector[],
  options: RunnerOptions = {},
): ProjectorRunner {
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH_SIZE);
  const pageSize = Math.min(batchSize, PAGE_SIZE);
  const maxPendingDocs = options.maxPendingDocs ?? DEFAULT_MAX_PENDING_DOCS;
  const maxHeapBytes = getHeapStatistics().heap_size_limit * (options.maxHeapShare ?? DEFAULT_MAX_HEAP_SHARE);
  const wants = dispatcher(projectors);
  // One projector reads only its own types; several read everything once and dispatch here.
  const typePrefixes = projectors.length === 1 ? projectors[0]!.typePrefixes : undefined;
  let lock: Promise<unknown> = Promise.resolve();

  function exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = lock.then(work, work);
    lock = next.catch(() => undefined);
    return next;
  }

  /** Whether a read model's closed versions go to the store while its batch folds (a build's). */
  const staging = (work: Pending): boolean =>
    store.stageVersions !== undefined && work.projector.versioned !== undefined;

  /** Folds one page's events of one read model into its pending documents. */
  async function fold(work: Pending, events: readonly RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    // A collection empty when the step began, with nothing carried, has nothing to look up or let go of.
    const ids = work.empty && work.read.size === 0 ? null : new Set<string>();
    if (ids !== null) {
      const missing: string[] = [];
      for (const event of events) {
        const id = work.projector.keyOf(event);
        if (id === null || ids.has(id)) continue;
        ids.add(id);
        if (!work.changed.has(id) && !work.read.has(id)) missing.push(id);
      }
      if (missing.length > 0 && !work.empty) {
        for (const [id, doc] of await store.getMany(work.projector.collection, missing)) work.read.set(id, doc);
      }
    }
    const closed = staging(work) ? [] : undefined;
    foldEvents(work.projector, work.read, events, work.changed, closed);
    if (closed !== undefined && closed.length > 0) store.stageVersions!(work.projector.collection, closed);
    // A document read back and then changed is folded from its changed version from now on: the stored
    // one (its row's texts and parsed values) would only be held until the commit.
    if (ids !== null && work.read.size > 0) {
      for (const id of ids) if (work.changed.has(id)) work.read.delete(id);
    }
    work.applied += events.length;
  }

  /** One collection's commit of a batch; false when another writer had moved its checkpoint (nothing written). */
  async function commit(
    work: Pending,
    writes: StoredDoc[],
    after: number,
    checkpoint: number,
    applied: number,
  ): Promise<boolean> {
    const committed = await store.commit(work.projector.collection, writes, checkpoint, after);
    if (!committed.ok) return false;
    // The batch's versions are on record: a document carried into the next batch no longer holds them.
    for (const write of writes) (write as FoldedDoc<unknown, unknown>).versions = undefined;
    options.onBatch?.({ collection: work.projector.collection, checkpoint, applied });
    return true;
  }

  /**
   * One step: batches folded from the stored checkpoints until the log's head (or a limit on what is
   * held). A batch's commits are made while the next batch folds (an adapter whose commit waits on I/O
   * or another thread overlaps the two); the next batch folds from the documents this one left, kept in
   * memory, and its commits follow only once this one's applied. A commit another writer refused (its
   * compare-and-set) ends the step: what was folded after it is dropped, and the next step starts again
   * from the stored checkpoints. `done` only when every collection had reached the head. `lagged`: the
   * log answered short of the head it had reported (a node behind another), so the step stopped there.
   */
  function step(): Promise<{ done: boolean; applied: number; checkpoint: number; lagged?: boolean }> {
    return exclusive(async () => {
      const afters = await Promise.all(projectors.map(async (p) => store.checkpoint(p.collection)));
      const from = Math.min(...afters);
      const head = await log.headPosition();
      if (head <= from) return { done: true, applied: 0, checkpoint: from };
      const counts = await Promise.all(
        projectors.map((p, i) => (afters[i]! < head ? store.count(p.collection) : Promise.resolve(1))),
      );
      const work: Pending[] = projectors.map((projector, i) => ({
        projector,
        after: afters[i]!,
        changed: new Map(),
        read: new Map(),
        empty: counts[i] === 0,
        applied: 0,
      }));
      let position = from;
      let lagged = false;
      let applied = 0;
      // Whether every commit made so far in this step applied (the earlier ones awaited by each next one).
      let committed: Promise<boolean> = Promise.resolve(true);
      let refused = false;
      try {
        for (;;) {
          const batchFrom = position;
          let last = false;
          for (;;) {
            const events = await log.readAll({
              afterPosition: position,
              toPosition: head,
              limit: pageSize,
              ...(typePrefixes ? { typePrefixes } : {}),
            });
            // A short page means everything up to `head` was considered: checkpoints may move there
            // even past events of other types, so idle projectors do not rescan them. Unfiltered, such a
            // page must hold the event at `head` itself; one that does not came from a node that lags,
            // and the checkpoint then moves no further than the last event seen.
            const lastSeen = events.at(-1)?.position;
            if (events.length < pageSize && typePrefixes === undefined && lastSeen !== head) {
              lagged = true;
              position = lastSeen ?? position;
            } else position = events.length < pageSize ? head : lastSeen!;
            const perProjector: RecordedEvent[][] = projectors.map(() => []);
            for (const event of events) {
              const wanted = wants(event.type);
              for (let i = 0; i < projectors.length; i++) {
                if (wanted[i] && event.position > work[i]!.after) perProjector[i]!.push(event);
              }
            }
            await Promise.all(work.map((w, i) => fold(w, perProjector[i]!)));
            const held = work.reduce((sum, w) => sum + w.changed.size + w.read.size, 0);
            // What is held (the documents carried from batch to batch included) ends the step, not only the batch.
            last =
              lagged ||
              position >= head ||
              refused ||
              held >= maxPendingDocs ||
              (held >= HEAP_CHECK_FROM_DOCS && heapFull(maxHeapBytes));
            if (last || position - batchFrom >= batchSize) break;
          }
          const checkpoint = position;
          const batch = work
            .filter((w) => w.after < checkpoint)
            .map((w) => ({ w, writes: [...w.changed.values()], after: w.after, applied: w.applied }));
          let asked!: () => void;
          const commitsAsked = new Promise<void>((resolve) => (asked = resolve));
          committed = committed.then(async (ok) => {
            if (!ok) return false;
            const commits = batch.map((b) => commit(b.w, b.writes, b.after, checkpoint, b.applied));
            asked();
            // Every commit of the batch has ended (applied, refused or failed) before the step goes on or fails.
            const settled = await Promise.allSettled(commits);
            const failed = settled.find((s) => s.status === 'rejected');
            if (failed) throw failed.reason;
            const outcomes = settled.map((s) => s.status === 'fulfilled' && s.value);
            if (outcomes.every(Boolean)) applied += batch.reduce((sum, b) => sum + b.applied, 0);
            else refused = true;
            return !refused;
          });
          // A failure is seen where the chain is awaited; until then it must not count as unhandled.
          committed.catch(() => undefined);
          if (last) {
            await committed;
            return { done: false, applied, checkpoint, lagged };
          }
          // A store that takes versions early gets the next batch's only after this batch's commits.
          if (work.some(staging)) await Promise.race([commitsAsked, committed.then(noop, noop)]);
          // The next batch folds from this one's documents, without reading them back.
          for (const { w } of batch) {
            for (const [id, doc] of w.changed) w.read.set(id, doc);
            w.changed = new Map();
            w.after = checkpoint;
            w.applied = 0;
          }
        }
      } finally {
        // A fold that failed leaves no commit of this step running when the lock is released.
        await committed.catch(() => undefined);
      }
    });
  }

  return {
    async catchUp() {
      let applied = 0;
      for (;;) {
        const result = await step();
        if (result.done) return applied;
        applied += result.applied;
        if (result.lagged) await pause(LAGGED_RETRY_MS);
      }
    },

    async run(signal: AbortSignal) {
      while (!signal.aborted) {
        const result = await step();
        if (result.done) await log.waitForAppend(result.checkpoint, options.idleWaitMs ?? DEFAULT_IDLE_WAIT_MS, signal);
        else if (result.lagged) await pause(LAGGED_RETRY_MS, signal);
      }
    },
  };
}

/** The runner of one read model alone (tests, and callers that need one collection brought up to date). */
export function createProjectorRunner(
  log: EventLog,
  store: ReadStore,
  projector: Projector,
  options: RunnerOptions = {},
): ProjectorRunner {
  return createProjectionRunner(log, store, [projector], options);
}
