import { setTimeout as sleep } from 'node:timers/promises';
import type { EventLog } from '../eventstore/port.ts';
import type { Projector } from '../projectors/projector.ts';
import { createProjectionRunner, type RunnerOptions } from '../projectors/runner.ts';
import type { GenerationSpace } from '../readmodels/generations/port.ts';
import type { ReadStore } from '../readmodels/port.ts';

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
      /** The previous generation when it could not be removed, and why (the next replay removes it). */
      leftBehind: string | null;
    }
  | { ok: false; reason: string };

/** The runner's commit limits a replay hands on as given (the runner's defaults where absent). */
const REPLAY_LIMITS = ['batchSize', 'maxPendingDocs', 'maxHeapShare'] as const;
type ReplayLimits = Pick<RunnerOptions, (typeof REPLAY_LIMITS)[number]>;

function limitsOf(options: ReplayLimits): ReplayLimits {
  const limits: ReplayLimits = {};
  for (const key of REPLAY_LIMITS) if (options[key] !== undefined) limits[key] = options[key];
  return limits;
}

export type ReplayOptions = ReplayLimits & {
  space: GenerationSpace;
  log: EventLog;
  projectors: readonly Projector[];
  onProgress?: (progress: ReplayProgress) => void;
  /** One-line notes (partial generations removed, the switch) for the operator. */
  onNote?: (message: string) => void;
  clock?: () => number;
  /** How long to wait, after the switch, for processes still using the old generation (where removal would disturb them). */
  releaseTimeoutMs?: number;
};

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

async function readCheckpoints(store: ReadStore, collections: readonly string[]): Promise<Map<string, number>> {
  const checkpoints = new Map<string, number>();
  for (const collection of collections) checkpoints.set(collection, await store.checkpoint(collection));
  return checkpoints;
}

/** Waits until no process uses `generation`; false if some still did after `timeoutMs`. */
async function released(
  space: GenerationSpace,
  generation: number,
  timeoutMs: number,
  clock: () => number,
): Promise<boolean> {
  const deadline = clock() + timeoutMs;
  while (await space.inUse(generation)) {
    if (clock() >= deadline) return false;
    await sleep(200);
  }
  return true;
}

/**
 * `pulseboard replay`: folds the whole log, with the projectors' own runners (the same fold code as
 * the live service), into generation live+1 beside the live generation; catches up to the live
 * generation's checkpoints; then names the new generation live with one compare-and-set on the
 * pointer and removes the old generation once nobody uses it. Until that switch nothing the live
 * service reads is touched, so a replay that fails or is killed leaves the live generation as it
 * was; what it built is removed at once, or by the next replay if it was killed.
 */
export async function replayReadModels(options: ReplayOptions): Promise<ReplayOutcome> {
  const { space, log } = options;
  const clock = options.clock ?? (() => performance.now());
  const note = options.onNote ?? (() => undefined);
  const collections = options.projectors.map((p) => p.collection);
  const lock = await space.acquireReplayLock();
  if (!lock.ok) return lock;
  try {
    const pointer = await space.readPointer();
    if (!pointer.ok) return pointer;
    const live = pointer.generation;
    const target = live + 1;
    for (const generation of await space.list()) {
      if (generation === live) continue;
      if (generation < live && (await space.inUse(generation))) {
        note(`left ${space.label(generation)}, an old generation a process still uses`);
        continue;
      }
      const removed = await space.remove(generation, lock.fence);
      if (!removed.ok) return removed;
      note(
        generation > live
          ? `removed ${space.label(generation)}, left by an interrupted replay`
          : `removed ${space.label(generation)}, an old generation`,
      );
    }

    const started = clock();
    // Nobody reads the new generation before the switch, and a failed or killed build is removed.
    const store = space.open(target, 'build', lock.fence);
    let built = false;
    try {
      const checkpoints = new Map<string, number>(collections.map((collection) => [collection, 0]));
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
          secondsLeft:
            positionsPerMs > 0 ? Math.max(0, Math.max(head, position) - position) / positionsPerMs / 1000 : null,
          elapsedMs,
        };
      };
      // One runner for every read model: the log is read once, each batch dispatched to all of them.
      const runner = createProjectionRunner(log, store, options.projectors, {
        ...limitsOf(options),
        onBatch: ({ collection, checkpoint, applied }) => {
          checkpoints.set(collection, checkpoint);
          eventsApplied += applied;
          options.onProgress?.(progress());
        },
      });

      // From position 0 to the head; then until every read model is at least where the live
      // generation is, so readers can move over without seeing anything go backwards.
      await runner.catchUp();
      const liveStore = space.open(live);
      let liveCheckpoints: Map<string, number>;
      try {
        liveCheckpoints = await readCheckpoints(liveStore, collections);
      } finally {
        await liveStore.close();
      }
      for (let round = 0; round < 5; round++) {
        head = await log.headPosition();
        await runner.catchUp();
        const behind = collections.some((c) => (checkpoints.get(c) ?? 0) < (liveCheckpoints.get(c) ?? 0));
        if (!behind) break;
      }
      for (const [collection, stored] of await readCheckpoints(store, collections)) {
        if (stored < (liveCheckpoints.get(collection) ?? 0)) {
          return {
            ok: false,
            reason: `the new ${collection} read model stayed behind the live one; the live generation is unchanged`,
          };
        }
        checkpoints.set(collection, stored);
      }
      options.onProgress?.(progress());
      const finished = progress();

      if (!(await lock.held())) {
        return {
          ok: false,
          reason: 'the replay lock was lost (another replay may have taken it over); nothing was switched',
        };
      }
      // Closed before the switch: a serving process then opens the new generation with no other
      // connection holding it (SQLite), and nothing more is written to it from here.
      await store.close();
      const switched = await space.switchPointer(live, target, lock.fence);
      if (!switched.ok) {
        return {
          ok: false,
          reason: `the live generation changed during the replay (${switched.reason}); nothing was switched`,
        };
      }
      built = true;
      note(`switched to ${space.label(target)} (generation ${target})`);

      let leftBehind: string | null = null;
      try {
        if (space.removalDisturbsUsers)
          note(`waiting for processes still using ${space.label(live)} to move to generation ${target}`);
        if (await released(space, live, options.releaseTimeoutMs ?? 60_000, clock)) {
          const removed = await space.remove(live, lock.fence);
          if (removed.ok) note(`removed ${space.label(live)} (generation ${live})`);
          else leftBehind = `${space.label(live)} (${removed.reason})`;
        } else {
          leftBehind = `${space.label(live)} (still in use after ${((options.releaseTimeoutMs ?? 60_000) / 1000).toFixed(1)} s)`;
        }
      } catch (error) {
        leftBehind = `${space.label(live)} (${describe(error)})`;
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
        const current = await space.readPointer().catch(() => null);
        // Fenced: a replay that lost its lock leaves the build alone, which may be a later replay's by now.
        if (current?.ok && current.generation !== target) await space.remove(target, lock.fence).catch(() => undefined);
      }
    }
  } finally {
    await lock.release().catch(() => undefined);
  }
}
