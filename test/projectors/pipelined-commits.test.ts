/**
 * A step's batches overlap: a batch's commit runs while the next batch folds (from the documents the
 * commit is writing, kept in memory), and each commit is asked for only once the one before it applied.
 * A commit another writer refuses ends the step without writing what was folded after it; a commit that
 * fails fails the catch-up and leaves nothing running. Either way the documents end up as one runner
 * alone builds them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectionRunner } from '../../projectors/runner.ts';
import type { CommitOutcome, ReadStore } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';

type Hooks = {
  /** Runs before the store commits (`checkpoint` the one asked for); its result replaces the store's outcome when it gives one. */
  beforeCommit?: (index: number, checkpoint: number) => Promise<CommitOutcome | void>;
  /** A read of a stored checkpoint (what a step begins with). */
  onCheckpointRead?: () => void;
};

/** The store with its commits numbered, delayed or refused by `hooks`, and its checkpoint reads reported. */
function hooked(store: ReadStore, hooks: Hooks): ReadStore {
  let commits = 0;
  return {
    ...store,
    async checkpoint(collection) {
      hooks.onCheckpointRead?.();
      return store.checkpoint(collection);
    },
    async commit(collection, writes, checkpoint, expected) {
      const replaced = await hooks.beforeCommit?.(commits++, checkpoint);
      if (replaced) return replaced;
      return store.commit(collection, writes, checkpoint, expected);
    },
  };
}

function watchedLog(log: EventLog, onRead: () => void): EventLog {
  return {
    ...log,
    readAll(query) {
      onRead();
      return log.readAll(query);
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('pipelined commits of a step', () => {
  let dir: string;
  let log: EventLog;
  let reference: ReadStore;
  let stores = 0;
  const freshStore = () => createSqliteReadStore(join(dir, `store-${stores++}.sqlite`));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-pipelined-'));
    log = createSqliteEventLog(join(dir, 'events.sqlite'));
    await appendProjectHistory(log, { projects: 30, steps: 900, seed: 23 });
    reference = freshStore();
    await createProjectionRunner(log, reference, projectors).catchUp();
  });

  afterAll(async () => {
    await reference.close();
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('folds the next batch while a commit is under way, and asks for each commit after the one before applied', async () => {
    const store = freshStore();
    try {
      let reads = 0;
      let underWay = 0;
      let readsDuringCommits = 0;
      let overlapping = 0;
      const runner = createProjectionRunner(
        watchedLog(log, () => {
          reads++;
          if (underWay > 0) readsDuringCommits++;
        }),
        hooked(store, {
          beforeCommit: async () => {
            underWay++;
            // Commits of one batch (one per collection) run together; one of a later batch never joins them.
            overlapping = Math.max(overlapping, underWay);
            await sleep(5);
            underWay--;
          },
        }),
        projectors,
        { batchSize: 100 },
      );
      await runner.catchUp();
      assert.ok(reads > 3, 'the log was read in several batches');
      assert.ok(readsDuringCommits > 0, 'the log was read while a commit was under way');
      assert.ok(overlapping <= projectors.length, 'no commit was asked for before the batch before it applied');
      assert.equal(firstDifference(await dumpReadModels(reference), await dumpReadModels(store)), null);
    } finally {
      await store.close();
    }
  });

  it('ends the step at a refused commit, writes nothing folded after it, and the next step starts from the store', async () => {
    const store = freshStore();
    try {
      // What the runner asked of the store, in order: commits (with their checkpoints) and checkpoint reads.
      const asked: ({ commit: number } | 'checkpoint read')[] = [];
      let refusedAt: number | null = null;
      const runner = createProjectionRunner(
        log,
        hooked(store, {
          // The third commit asked for is refused once, as if another writer had moved the checkpoint.
          beforeCommit: async (index, checkpoint) => {
            asked.push({ commit: checkpoint });
            if (index !== 2) return;
            refusedAt = checkpoint;
            return { ok: false, reason: 'checkpoint_moved', actual: -1 };
          },
          onCheckpointRead: () => asked.push('checkpoint read'),
        }),
        projectors,
        { batchSize: 100 },
      );
      await runner.catchUp();
      assert.ok(refusedAt !== null, 'a commit was refused');
      // The step ended there: no commit of a later batch was asked for until a new step read the checkpoints.
      const after = asked.slice(asked.findIndex((a) => a !== 'checkpoint read' && a.commit === refusedAt));
      const nextStep = after.indexOf('checkpoint read');
      assert.ok(nextStep > 0, 'a new step began after the refusal');
      assert.ok(
        after.slice(0, nextStep).every((a) => a !== 'checkpoint read' && a.commit === refusedAt),
        "only the refused batch's own commits were asked for before the next step",
      );
      assert.ok(
        asked.some((a) => a !== 'checkpoint read' && a.commit > refusedAt!),
        'the next step committed past the refused batch',
      );
      assert.equal(firstDifference(await dumpReadModels(reference), await dumpReadModels(store)), null);
    } finally {
      await store.close();
    }
  });

  it('fails the catch-up when a commit fails, with nothing left running, and a later catch-up completes', async () => {
    const store = freshStore();
    try {
      let failNext = true;
      let running = 0;
      let finishedAfterFailure = false;
      let failed = false;
      const runner = createProjectionRunner(
        log,
        hooked(store, {
          beforeCommit: async (index) => {
            running++;
            await sleep(2);
            running--;
            if (failed) finishedAfterFailure = true;
            if (index === 3 && failNext) {
              failNext = false;
              failed = true;
              throw new Error('disk I/O error');
            }
          },
        }),
        projectors,
        { batchSize: 100 },
      );
      await assert.rejects(runner.catchUp(), /disk I\/O error/);
      assert.equal(running, 0, 'no commit of the failed step is still running');
      finishedAfterFailure = false;
      await sleep(20);
      assert.equal(finishedAfterFailure, false, 'nothing of the failed step ran after it failed');
      await runner.catchUp();
      assert.equal(firstDifference(await dumpReadModels(reference), await dumpReadModels(store)), null);
    } finally {
      await store.close();
    }
  });
});
