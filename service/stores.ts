import type { Config } from '../config/config.ts';
import type { EventLog } from '../eventstore/port.ts';
import { openEventLog } from '../eventstore/open.ts';
import type { Projector } from '../projectors/projector.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectionRunner, type ProjectorRunner, type RunnerOptions } from '../projectors/runner.ts';
import {
  openGenerationalReadStore,
  type GenerationalReadStore,
  type WriterGeneration,
} from '../readmodels/generations/generational-read-store.ts';
import type { GenerationSpace } from '../readmodels/generations/port.ts';
import { createCommitSignals, signalCommits, type CommitSignals } from '../readmodels/commit-signal.ts';
import type { ReadStore } from '../readmodels/port.ts';
import { createSqliteGenerationSpace } from '../readmodels/sqlite/generations.ts';

export type Stores = {
  log: EventLog;
  /** The read store reads are served from (for the embedded store: the serving generation). */
  store: ReadStore;
  /**
   * The projection runners to run in the background: one, which reads the log once per batch for
   * every read model (each collection still committed with its own checkpoint).
   */
  runners: ProjectorRunner[];
  /**
   * Every commit the runners of this process make is emitted here (the projector worker posts its
   * own, which `serve` emits here too): what wakes long-polls and change streams.
   */
  commits: CommitSignals;
  /** Applies everything the log holds now to every read model. */
  catchUp(): Promise<number>;
  /** Read-model generations (`pulseboard replay`); null for a store without generations. */
  generations(): { serving: number; newest: number } | null;
  /** Looks for a generation switch now instead of at the next periodic check. */
  refreshGenerations(): Promise<void>;
  close(): Promise<void>;
};

export type ProjectionLimits = Required<Pick<RunnerOptions, 'batchSize' | 'maxPendingDocs'>> &
  Pick<RunnerOptions, 'maxHeapShare'>;

/**
 * How much a projection runner folds in memory before it commits, by read store and purpose. Each
 * document a commit writes costs far more than folding an event into it, so the embedded store holds
 * as much as it can: a batch ends at the log's head, after 10,000,000 positions, at 500,000 documents,
 * or once the V8 heap's used size (garbage not yet collected included) passes 70 % of its limit (its
 * commit writes one row at a time, so it needs little more). A catch-up or replay of the whole log then
 * writes each document once: at 100k projects one batch, where half the heap split it in two. A MongoDB
 * transaction should stay far below its time and cache limits, so commits there stay at a few thousand
 * documents (and the runner's default share of the heap).
 */
export function projectionLimits(config: Config, purpose: 'live' | 'replay'): ProjectionLimits {
  if (config.POSTGRES_URL !== undefined) return POSTGRES_LIMITS;
  if (config.MONGODB_URL !== undefined)
    return purpose === 'live'
      ? { batchSize: 10_000, maxPendingDocs: 5_000 }
      : { batchSize: 20_000, maxPendingDocs: 10_000 };
  return EMBEDDED_LIMITS;
}

export const EMBEDDED_LIMITS: ProjectionLimits = { batchSize: 10_000_000, maxPendingDocs: 500_000, maxHeapShare: 0.7 };

/**
 * PostgreSQL: a commit is one transaction of about a dozen statements whatever its size (postgres-commit.ts).
 * A step ends when it holds maxPendingDocs documents, and each step writes every document it touched again
 * (its row, its history version's close, its read-back): at 5,000 a live catch-up of 10k projects took 54
 * steps and 7.6x its raw baseline, at 50,000 it takes 4. Catch-up and replay alike; the heap share still bounds it.
 */
const POSTGRES_LIMITS: ProjectionLimits = { batchSize: 100_000, maxPendingDocs: 50_000 };

/**
 * Where the configuration keeps read-model generations: PostgreSQL when POSTGRES_URL is set, MongoDB
 * when MONGODB_URL is (each driver loaded only then), else the data directory.
 */
export async function openGenerationSpace(
  config: Config,
  options: Pick<StoreOptions, 'sqliteCacheKiB'> = {},
): Promise<GenerationSpace> {
  if (config.POSTGRES_URL !== undefined) {
    const { createPostgresGenerationSpace } = await import('../readmodels/postgres/postgres-generations.ts');
    return createPostgresGenerationSpace(config.POSTGRES_URL);
  }
  if (config.MONGODB_URL !== undefined) {
    const { createMongoGenerationSpace } = await import('../readmodels/mongodb/mongodb-generations.ts');
    return createMongoGenerationSpace(config.MONGODB_URL);
  }
  return createSqliteGenerationSpace(config.PULSEBOARD_DATA_DIR, {
    mapBytes: config.PULSEBOARD_SQLITE_MAP_MB * 1024 * 1024,
    ...(options.sqliteCacheKiB === undefined ? {} : { readCacheKiB: options.sqliteCacheKiB }),
  });
}

export type StoreOptions = {
  pollMs?: number;
  /** The embedded stores' page cache per connection, in KiB, for a process that reads each row once (an export). */
  sqliteCacheKiB?: number;
  /** Serve reads from POSTGRES_REPLICA_URL where it is set (`serve --role api`: a process that writes nothing). */
  replicaReads?: boolean;
};

/**
 * Opens the event log and read store the configuration selects (KurrentDB / MongoDB, else embedded SQLite).
 * The read store follows `pulseboard replay`: a running process notices a switch to a new
 * generation within `pollMs`, moves its projectors there, and moves its reads there once the new
 * generation has caught up.
 */
export async function openStores(config: Config, options: StoreOptions = {}): Promise<Stores> {
  const log = await openEventLog(config, options);
  const space = await openGenerationSpace(config, options);
  const opened = await openGenerationalReadStore(space, {
    collections: projectors.map((p) => p.collection),
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
  });
  if (!opened.ok) {
    await log.close();
    throw new Error(opened.reason);
  }
  const generational = opened.value;
  const replica =
    options.replicaReads && config.POSTGRES_REPLICA_URL !== undefined
      ? (await import('../readmodels/postgres/postgres-replica.ts')).createReplicaReads(
          config.POSTGRES_REPLICA_URL,
          generational.reader,
          () => generational.generations().serving,
        )
      : null;
  // The store-wide feed opens only when something waits for commits (commit-watch.ts), not in every command.
  const feed = space.commitFeed?.();
  const commits = createCommitSignals(replica && feed ? replica.paced(feed) : feed);
  const runner = generationFollowingRunner(log, generational, projectors, projectionLimits(config, 'live'), commits);
  return {
    log,
    store: replica?.store ?? generational.reader,
    runners: [runner],
    commits,
    async catchUp() {
      await generational.refresh();
      return runner.catchUp();
    },
    generations: () => generational.generations(),
    refreshGenerations: () => generational.refresh(),
    async close() {
      await commits.close();
      // The replica's reader closes the generational one it wraps.
      await (replica ?? generational).close();
      await log.close();
    },
  };
}

/** Stores over one read store without generations (other adapters, tests); the runner's default limits unless given. */
export function assembleStores(log: EventLog, store: ReadStore, limits?: ProjectionLimits): Stores {
  const commits = createCommitSignals();
  const runner = createProjectionRunner(log, signalCommits(store, commits.emit), projectors, limits);
  return {
    log,
    store,
    runners: [runner],
    commits,
    catchUp: () => runner.catchUp(),
    generations: () => null,
    refreshGenerations: async () => undefined,
    async close() {
      await store.close();
      await log.close();
    },
  };
}

/**
 * A projection runner that writes to the newest generation. When the pointer moves on, it finishes
 * its batch on the old generation (harmless: that file is being dropped) and resumes on the new
 * one from the new one's own checkpoint. One inner runner per generation keeps `catchUp` and `run`
 * under one lock, as the plain runner does.
 */
function generationFollowingRunner(
  log: EventLog,
  generational: GenerationalReadStore,
  projectors: readonly Projector[],
  limits: ProjectionLimits,
  commits: CommitSignals,
): ProjectorRunner {
  const inner = new WeakMap<ReadStore, ProjectorRunner>();
  const runnerFor = (generation: WriterGeneration): ProjectorRunner => {
    let runner = inner.get(generation.store);
    if (!runner) {
      runner = createProjectionRunner(log, signalCommits(generation.store, commits.emit), projectors, limits);
      inner.set(generation.store, runner);
    }
    return runner;
  };

  return {
    async catchUp() {
      const writer = generational.acquireWriter();
      try {
        return await runnerFor(writer.generation).catchUp();
      } finally {
        writer.release();
      }
    },

    async run(signal: AbortSignal) {
      while (!signal.aborted) {
        const writer = generational.acquireWriter();
        try {
          await runnerFor(writer.generation).run(AbortSignal.any([signal, writer.generation.retired]));
        } catch (error) {
          // A generation that a replay has just replaced (and removed) refuses writes: move on.
          await generational.refresh().catch(() => undefined);
          if (!writer.generation.retired.aborted) throw error;
        } finally {
          writer.release();
        }
      }
    },
  };
}
