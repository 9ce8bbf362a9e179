/**
 * Reads from a PostgreSQL streaming replica (POSTGRES_REPLICA_URL, `serve --role api`), the primary
 * standing in whenever the replica cannot answer as freshly. The rules, per collection:
 * - A checkpoint is the replica's while it is at least every checkpoint this process has already
 *   served, and the replica is not lagging; otherwise the primary's. So checkpoints never move back.
 * - A delta page bounded by `upToSeq` reads the replica only when the replica's checkpoint has reached
 *   `upToSeq` (its rows up to there are then all replayed): a page never skips a row that the primary
 *   has and the replica has not yet, whichever side gave `upToSeq`.
 * - Other reads go to the replica while its checkpoint is at least the highest served (monotonic reads).
 * - Lagging: a commit the primary has (heard by NOTIFY, or by reading its checkpoint at most every
 *   `probeMs` beside the replica's) that the replica has not replayed after `maxLagMs`. A consumer whose
 *   cursor is ahead of a lagging replica so gets pages read on the primary.
 * - Any error on the replica falls back to the primary for that read; an outage (refused or lost
 *   connection) sends every read to the primary for `retryMs`, then the replica is tried again. A
 *   dead replica is never a 503.
 * The primary's commit feed is passed on paced: a commit is announced once the replica has it (or lags),
 * so a long-poll woken by it reads the row. The history read model stays on the primary.
 */
import pg from 'pg';
import type { CommitFeed } from '../commit-signal.ts';
import type { ReadStore } from '../port.ts';
import { isPostgresOutage } from './postgres-faults.ts';
import { createPool } from './postgres-pool.ts';
import { postgresReadStoreOn } from './postgres-read-store.ts';

export type ReplicaOptions = {
  /** A commit the replica has not replayed after this long makes it lagging: reads go to the primary. */
  maxLagMs?: number;
  /** After an outage of the replica, how long reads stay on the primary before it is tried again. */
  retryMs?: number;
  /** How often a paced commit asks the replica whether it has replayed it. */
  paceMs?: number;
  /** How often a checkpoint read also reads the primary's, to tell lag without a commit feed. */
  probeMs?: number;
  onProblem?: (message: string) => void;
  clock?: () => number;
};

export type ReplicaReads = {
  /** The serving read store: reads routed as above, writes and `history` on the primary. */
  store: ReadStore;
  /** The primary's commit feed, each commit passed on once the replica has it or lags. */
  paced(feed: CommitFeed): CommitFeed;
  /** Reads answered by each side so far. */
  counts(): { replica: number; primary: number };
  close(): Promise<void>;
};

type Side<T> = { ok: true; value: T } | { ok: false };

/**
 * `primary` is the serving view on the primary (generational-read-store.ts); `serving()` the generation
 * it serves, whose tables the replica reads (replicated like every other table).
 */
export function createReplicaReads(
  url: string,
  primary: ReadStore,
  serving: () => number,
  options: ReplicaOptions = {},
): ReplicaReads {
  const maxLagMs = options.maxLagMs ?? 1_000;
  const retryMs = options.retryMs ?? 1_000;
  const paceMs = options.paceMs ?? 10;
  const probeMs = options.probeMs ?? 500;
  const probed = new Map<string, number>();
  const clock = options.clock ?? Date.now;
  const report = options.onProblem ?? ((message: string) => process.stderr.write(`read models: ${message}\n`));
  const pool = createPool(url);
  const stores = new Map<number, ReadStore>();
  /** The replica's checkpoint last read, per `${generation} ${collection}`. */
  const replicaAt = new Map<string, number>();
  /** The highest checkpoint this process has served, per collection. */
  const served = new Map<string, number>();
  /** Commits the primary announced that the replica had not replayed when last asked: [checkpoint, heard at]. */
  const announced = new Map<string, [number, number][]>();
  const counts = { replica: 0, primary: 0 };
  let downUntil = 0;
  let closed = false;

  function replicaStore(): { generation: number; store: ReadStore } {
    const generation = serving();
    let store = stores.get(generation);
    if (!store) {
      store = postgresReadStoreOn(pool, generation, { ownsPool: false });
      stores.set(generation, store);
      // Generations no longer served are closed (their reads, if any are in flight, fail over to the primary).
      for (const [g, old] of stores)
        if (g < generation - 1) {
          stores.delete(g);
          old.close().catch(() => undefined);
        }
    }
    return { generation, store };
  }

  async function onReplica<T>(work: (store: ReadStore) => Promise<T>): Promise<Side<T>> {
    if (closed || clock() < downUntil) return { ok: false };
    try {
      const value = await work(replicaStore().store);
      counts.replica += 1;
      return { ok: true, value };
    } catch (error) {
      // Anything but a server's refusal (a refused, lost or timed-out connection) is an outage.
      if (!(error instanceof pg.DatabaseError) || isPostgresOutage(error)) {
        if (clock() >= downUntil) report('the PostgreSQL replica does not answer; reading the primary');
        downUntil = clock() + retryMs;
      }
      return { ok: false };
    }
  }

  const at = (collection: string) => replicaAt.get(`${serving()} ${collection}`) ?? -1;

  function noteReplica(generation: number, collection: string, checkpoint: number): void {
    const key = `${generation} ${collection}`;
    replicaAt.set(key, Math.max(replicaAt.get(key) ?? -1, checkpoint));
    const pending = announced.get(collection);
    if (pending) {
      while (pending.length > 0 && pending[0]![0] <= checkpoint) pending.shift();
      if (pending.length === 0) announced.delete(collection);
    }
  }

  /** The primary has `checkpoint`: pending until the replica is seen there. */
  function noteAnnounced(collection: string, checkpoint: number): void {
    if (at(collection) >= checkpoint) return;
    const pending = announced.get(collection) ?? [];
    if ((pending[pending.length - 1]?.[0] ?? -1) >= checkpoint) return;
    // Bounded: the oldest pending commit decides lagging, the newest ones keep it current.
    if (pending.length >= 1_000) pending.splice(1, 1);
    pending.push([checkpoint, clock()]);
    announced.set(collection, pending);
  }

  function probePrimary(collection: string): void {
    const last = probed.get(collection);
    if (last !== undefined && clock() - last < probeMs) return;
    probed.set(collection, clock());
    primary.checkpoint(collection, { fresh: true }).then(
      (checkpoint) => noteAnnounced(collection, checkpoint),
      () => undefined,
    );
  }

  const lagging = (collection: string) => {
    const oldest = announced.get(collection)?.[0];
    return oldest !== undefined && clock() - oldest[1] > maxLagMs;
  };

  const fresh = (collection: string) => !lagging(collection) && at(collection) >= (served.get(collection) ?? -1);

  /** `fresh` as the port has it: false shares a read issued earlier in the same event-loop turn. */
  async function replicaCheckpoint(collection: string, fresh: boolean): Promise<Side<number>> {
    return onReplica(async (store) => {
      const generation = serving();
      const checkpoint = await store.checkpoint(collection, { fresh });
      noteReplica(generation, collection, checkpoint);
      return checkpoint;
    });
  }

  /** A read of `collection`: the replica's answer where it is fresh enough, else (or on any error) the primary's. */
  async function read<T>(collection: string, work: (store: ReadStore) => Promise<T>): Promise<T> {
    if (fresh(collection)) {
      const answer = await onReplica(work);
      if (answer.ok) return answer.value;
    }
    counts.primary += 1;
    return work(primary);
  }

  const store: ReadStore = {
    get history() {
      return primary.history;
    },
    async checkpoint(collection, checkpointOptions) {
      // Asked even while lagging: its answer is what ends the lag.
      const replica = await replicaCheckpoint(collection, checkpointOptions?.fresh === true);
      if (replica.ok) probePrimary(collection);
      const highest = served.get(collection) ?? -1;
      if (replica.ok && !lagging(collection) && replica.value >= highest) {
        served.set(collection, replica.value);
        return replica.value;
      }
      counts.primary += 1;
      const checkpoint = await primary.checkpoint(collection, checkpointOptions);
      served.set(collection, Math.max(highest, checkpoint));
      return checkpoint;
    },
    async delta(collection, query) {
      if (at(collection) >= query.upToSeq) {
        const answer = await onReplica((s) => s.delta(collection, query));
        if (answer.ok) return answer.value as never;
      }
      counts.primary += 1;
      return primary.delta(collection, query);
    },
    get: (collection, id) => read(collection, (s) => s.get(collection, id)),
    getMany: (collection, ids) => read(collection, (s) => s.getMany(collection, ids)),
    findIds: (collection, key, value, limit) => read(collection, (s) => s.findIds(collection, key, value, limit)),
    findDocs: (collection, key, value, limit) => read(collection, (s) => s.findDocs(collection, key, value, limit)),
    findIdsMany: (collection, key, values, limit) =>
      read(collection, (s) => s.findIdsMany(collection, key, values, limit)),
    findKeysByPrefix: (collection, key, prefix, limit) =>
      read(collection, (s) => s.findKeysByPrefix(collection, key, prefix, limit)),
    list: (collection, query) => read(collection, (s) => s.list(collection, query)),
    count: (collection, facets) => read(collection, (s) => s.count(collection, facets)),
    listKeyset: (collection, query) => read(collection, (s) => s.listKeyset(collection, query)),
    commit: (collection, writes, checkpoint, expected) => primary.commit(collection, writes, checkpoint, expected),
    clear: () => primary.clear(),
    close,
  };

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    for (const s of stores.values()) await s.close().catch(() => undefined);
    stores.clear();
    await pool.end().catch(() => undefined);
    await primary.close();
  }

  function paced(feed: CommitFeed): CommitFeed {
    return {
      open(handlers) {
        /** Per collection: the newest commit heard and not yet passed on, and whether a wait for it runs. */
        const waiting = new Map<string, { checkpoint: number; running: boolean }>();
        let ended = false;
        const sleep = () => new Promise((resolve) => setTimeout(resolve, paceMs));

        async function pass(collection: string): Promise<void> {
          const entry = waiting.get(collection)!;
          entry.running = true;
          while (!ended) {
            const target = entry.checkpoint;
            const replica = await replicaCheckpoint(collection, true);
            const reached = replica.ok && replica.value >= target;
            // Reached, lagging or down: the commit watch reads the checkpoint now and gets the right side's.
            if (reached || !replica.ok || lagging(collection)) {
              handlers.commit(collection, target);
              if (entry.checkpoint === target) break;
              continue;
            }
            await sleep();
          }
          waiting.delete(collection);
        }

        const inner = feed.open({
          live: handlers.live,
          failed: handlers.failed,
          commit(collection, checkpoint) {
            noteAnnounced(collection, checkpoint);
            const entry = waiting.get(collection);
            if (entry) entry.checkpoint = Math.max(entry.checkpoint, checkpoint);
            else {
              waiting.set(collection, { checkpoint, running: false });
              void pass(collection);
            }
          },
        });
        return {
          async close() {
            ended = true;
            await inner.close();
          },
        };
      },
    };
  }

  return { store, paced, counts: () => ({ ...counts }), close };
}
