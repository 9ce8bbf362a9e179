/**
 * A batch that begins on an empty collection folds without reading documents back (nothing can be
 * there), and the result is the same, byte for byte, as folding with reads: the same log caught up in
 * one batch into an empty store, in many small batches that fold from the documents the batch before
 * left in memory, and in small steps (few documents held) that read back what earlier ones wrote.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { generateLines } from '../../ingest/generate/generate.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectionRunner } from '../../projectors/runner.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { dumpReadModels, firstDifference } from '../support/seed.ts';

function countingReads(store: ReadStore): { store: ReadStore; reads: () => number } {
  let reads = 0;
  return {
    store: {
      ...store,
      getMany(collection, ids) {
        reads += 1;
        return store.getMany(collection, ids);
      },
    },
    reads: () => reads,
  };
}

describe('projection runner on empty collections', () => {
  it('reads nothing back in a batch that begins empty, and folds the same documents as small batches that do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-empty-'));
    const log = createSqliteEventLog(join(dir, 'events.sqlite'));
    const whole = createSqliteReadStore(join(dir, 'whole.sqlite'));
    const small = createSqliteReadStore(join(dir, 'small.sqlite'));
    const carried = createSqliteReadStore(join(dir, 'carried.sqlite'));
    try {
      const lines = [
        ...generateLines({
          projects: 40,
          seed: 5,
          calls: 120,
          days: 6,
          hotContractCalls: 3,
          followerProvider: 'followerscope',
        }),
      ];
      await createIngestor(log, { followerProvider: 'followerscope' }).ingestBatch(lines, 'ndjson');

      const one = countingReads(whole);
      await createProjectionRunner(log, one.store, projectors).catchUp();
      assert.equal(one.reads(), 0, 'one batch from empty collections reads no document back');

      const chained = countingReads(carried);
      let commits = 0;
      await createProjectionRunner(log, chained.store, projectors, {
        batchSize: 97,
        onBatch: () => commits++,
      }).catchUp();
      assert.ok(commits > 2 * projectors.length, 'the log was committed in many batches');
      assert.equal(chained.reads(), 0, 'batches of one step fold from the documents the batch before left');

      const many = countingReads(small);
      await createProjectionRunner(log, many.store, projectors, { batchSize: 97, maxPendingDocs: 20 }).catchUp();
      assert.ok(many.reads() > 0, 'later small steps read back what earlier ones wrote');

      const folded = await dumpReadModels(whole);
      assert.ok((folded['projects'] ?? []).length >= 40, 'every project was folded');
      assert.equal(firstDifference(folded, await dumpReadModels(small)), null);
      assert.equal(firstDifference(folded, await dumpReadModels(carried)), null);
    } finally {
      await whole.close();
      await small.close();
      await carried.close();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
