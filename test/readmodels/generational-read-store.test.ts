/**
 * Reads move to a newer generation only on a positive answer that it has caught up, or that the old
 * one is gone: an error reading the serving generation's checkpoint is not such an answer.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { openGenerationalReadStore } from '../../readmodels/generations/generational-read-store.ts';
import type { GenerationSpace } from '../../readmodels/generations/port.ts';
import type { DocWrite, ReadStore } from '../../readmodels/port.ts';
import { createSqliteGenerationSpace, writePointer } from '../../readmodels/sqlite/generations.ts';

const C = 'projects';

function doc(id: string, seq: number): DocWrite {
  return {
    id,
    doc: { id },
    state: null,
    seq,
    writtenAt: '2026-11-20T08:00:00.000Z',
    sortKey: '2026-11-20T08:00:00.000Z',
    facet: 'visible',
    keys: {},
  };
}

describe('a generational read store following a switch', () => {
  let dir: string;
  let failing: number | null;

  /** The SQLite space, but the store of generation `failing` cannot answer its checkpoint. */
  function flaky(): GenerationSpace {
    const inner = createSqliteGenerationSpace(dir);
    return {
      ...inner,
      open(generation, purpose) {
        const store = inner.open(generation, purpose);
        const checkpoint: ReadStore['checkpoint'] = (collection, options) =>
          failing === generation
            ? Promise.reject(new Error('connection reset'))
            : store.checkpoint(collection, options);
        return { ...store, checkpoint };
      },
    };
  }

  async function commitTo(generation: number, seq: number): Promise<void> {
    const space = createSqliteGenerationSpace(dir);
    const store = space.open(generation);
    const outcome = await store.commit(C, [doc(`p${seq}`, seq)], seq);
    assert.ok(outcome.ok);
    await store.close();
    await space.close();
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-generational-'));
    failing = null;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stays on the serving generation while its checkpoint cannot be read, and moves once the new one has caught up', async () => {
    await commitTo(0, 100);
    const opened = await openGenerationalReadStore(flaky(), { collections: [C], pollMs: 3_600_000 });
    assert.ok(opened.ok);
    const generational = opened.value;
    try {
      await commitTo(1, 50);
      writePointer(dir, 1);
      failing = 0;
      await generational.refresh();
      assert.deepEqual(generational.generations(), { serving: 0, newest: 1 }, 'a transient error moved reads');
      failing = null;
      await generational.refresh();
      assert.equal(generational.generations().serving, 0, 'generation 1 is behind');
      await commitTo(1, 100);
      await generational.refresh();
      assert.equal(generational.generations().serving, 1);
      assert.equal(await generational.reader.checkpoint(C, { fresh: true }), 100);
    } finally {
      await generational.close();
    }
  });

  it('moves when the serving generation is gone, even behind', async () => {
    await commitTo(0, 100);
    const space = flaky();
    const opened = await openGenerationalReadStore(space, { collections: [C], pollMs: 3_600_000 });
    assert.ok(opened.ok);
    const generational = opened.value;
    try {
      await commitTo(1, 50);
      writePointer(dir, 1);
      failing = 0;
      await createSqliteGenerationSpace(dir).remove(0);
      await generational.refresh();
      assert.equal(generational.generations().serving, 1);
    } finally {
      await generational.close();
    }
  });
});
