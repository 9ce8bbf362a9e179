import type { EventLog } from '../eventstore/port.ts';
import type { Projector } from '../projectors/projector.ts';
import { createProjectorRunner } from '../projectors/runner.ts';
import {
  acquireReplayLock,
  generationFile,
  generationPath,
  listGenerations,
  readCheckpoints,
  readPointer,
  removeGeneration,
  writePointer,
} from '../readmodels/sqlite/generations.ts';
import { createSqliteReadStore } from '../readmodels/sqlite/sqlite-read-store.ts';

export type ReplayProgress = {
  generation: number;
  /** The log position every read model has reached (the slowest projector's checkpoint). */
  position: number;
  /** The log's head as last read (at least `position`). */
  head: number;
  /** Events folded so far, summed over projectors (an event two read models need counts twice). */
  eventsApplied: number;
  eventsPerSecond: number;
  /** Estimated from the rate positions are covered; null until there is a rate. */
  secondsLeft: number | null;
  elapsedMs: number;
};

export type ReplayOutcome =
  | {
      ok: true;
      generation: number;
      previous: number;
      head: number;
      eventsApplied: number;
      elapsedMs: number;
      /** Files of the previous generation that could not be removed (they are retried by the next replay). */
      leftBehind: string | null;
    }
  | { ok: false; reason: string };

export type ReplayOptions = {
  dataDir: string;
  log: EventLog;
  projectors: readonly Projector[];
  batchSize?: number;
  onProgress?: (progress: ReplayProgress) => void;
  /** One-line notes (partial generations removed, the switch) for the operator. */
  onNote?: (message: string) => void;
  clock?: () => number;
};

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * `pulseboard replay` for the embedded read store: folds the whole log, with the projectors'
 * own runners (the same fold code as the live service), into generation live+1 beside the live
 * generation; catches up to the live generation's checkpoints; then names the new generation live
 * with one atomic pointer replacement and removes the old generation's files. Until that
 * replacement nothing the live service reads is touched, so a replay that fails or is killed
 * leaves the live generation as it was; the partial file it leaves is removed by the next replay.
 */
export async function replayReadModels(options: ReplayOptions): Promise<ReplayOutcome> {
  const { dataDir, log } = options;
  const clock = options.clock ?? (() => performance.now());
  const note = options.onNote ?? (() => undefined);
  const lock = acquireReplayLock(dataDir);
  if (!lock.ok) return lock;
  try {
    const pointer = readPointer(dataDir);
    if (!pointer.ok) return pointer;
    const live = pointer.generation;
    const target = live + 1;
    for (const generation of listGenerations(dataDir)) {
      if (generation === live) continue;
      removeGeneration(dataDir, generation);
      note(
        generation > live
          ? `removed ${generationFile(generation)}, left by an interrupted replay`
          : `removed ${generationFile(generation)}, an old generation`,
      );
    }

    const started = clock();
    const store = createSqliteReadStore(generationPath(dataDir, target));
    let built = false;
    try {
      const checkpoints = new Map<string, number>(options.projectors.map((p) => [p.collection, 0]));
      let eventsApplied = 0;
      let head = await log.headPosition();
      const progress = (): ReplayProgress => {
        const position = Math.min(...checkpoints.values());
        const elapsedMs = Math.max(1, clock() - started);
        const positionsPerMs = position / elapsedMs;
        return {
          generation: target,
          position,
          head: Math.max(head, position),
          eventsApplied,
          eventsPerSecond: Math.round((eventsApplied / elapsedMs) * 1000),
          secondsLeft: positionsPerMs > 0 ? Math.max(0, Math.max(head, position) - position) / positionsPerMs / 1000 : null,
          elapsedMs,
        };
      };
      const runners = options.projectors.map((projector) =>
        createProjectorRunner(log, store, projector, {
          ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
          onBatch: ({ collection, checkpoint, applied }) => {
            checkpoints.set(collection, checkpoint);
            eventsApplied += applied;
            options.onProgress?.(progress());
          },
        }),
      );

      // From position 0 to the head; then until every read model is at least where the live
      // generation is, so readers can move over without seeing anything go backwards.
      await Promise.all(runners.map((r) => r.catchUp()));
      const liveCheckpoints = readCheckpoints(dataDir, live);
      for (let round = 0; round < 5; round++) {
        head = await log.headPosition();
        await Promise.all(runners.map((r) => r.catchUp()));
        const behind = options.projectors.some((p) => (checkpoints.get(p.collection) ?? 0) < (liveCheckpoints.get(p.collection) ?? 0));
        if (!behind) break;
      }
      for (const projector of options.projectors) {
        const stored = await store.checkpoint(projector.collection);
        if (stored < (liveCheckpoints.get(projector.collection) ?? 0)) {
          return { ok: false, reason: `the new ${projector.collection} read model stayed behind the live one; the live generation is unchanged` };
        }
        checkpoints.set(projector.collection, stored);
      }
      options.onProgress?.(progress());
      built = true;
      const finished = progress();
      await store.close();

      const still = readPointer(dataDir);
      if (!still.ok || still.generation !== live) {
        return { ok: false, reason: 'the live generation changed during the replay; nothing was switched' };
      }
      writePointer(dataDir, target);
      note(`switched to ${generationFile(target)} (generation ${target})`);

      let leftBehind: string | null = null;
      try {
        removeGeneration(dataDir, live);
        note(`removed ${generationFile(live)} (generation ${live})`);
      } catch (error) {
        leftBehind = `${generationPath(dataDir, live)} (${describe(error)})`;
      }
      return {
        ok: true,
        generation: target,
        previous: live,
        head: finished.head,
        eventsApplied: finished.eventsApplied,
        elapsedMs: finished.elapsedMs,
        leftBehind,
      };
    } catch (error) {
      return { ok: false, reason: `${describe(error)}; the live generation is unchanged` };
    } finally {
      if (!built) {
        await store.close().catch(() => undefined);
        // A failed build is never made live; drop it now rather than wait for the next replay.
        const current = readPointer(dataDir);
        if (!current.ok || current.generation !== target) removeGeneration(dataDir, target);
      }
    }
  } finally {
    lock.release();
  }
}
