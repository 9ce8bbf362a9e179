/**
 * The part of replay that only matters where removing a generation disturbs its users (MongoDB:
 * a dropped collection reads as empty): serving stores announce what they use, and a replay removes
 * the old generation only once nobody does. The generic code is exercised here on real SQLite
 * generations, with the announcements kept in memory instead of in a MongoDB collection; the
 * MongoDB announcements themselves are checked by the generation-space contract.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import {
  openGenerationalReadStore,
  type GenerationalReadStore,
} from '../../readmodels/generations/generational-read-store.ts';
import type { GenerationSpace } from '../../readmodels/generations/port.ts';
import { createSqliteGenerationSpace, generationPath } from '../../readmodels/sqlite/generations.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { replayReadModels } from '../../service/replay.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';

type Announcements = Map<string, readonly number[]>;

/** A SQLite space whose users announce, as MongoDB's do, into a registry shared by this process. */
function announcing(dir: string, registry: Announcements, onRemove?: (generation: number) => void): GenerationSpace {
  const inner = createSqliteGenerationSpace(dir);
  return {
    ...inner,
    removalDisturbsUsers: true,
    async remove(generation, fence) {
      onRemove?.(generation);
      return inner.remove(generation, fence);
    },
    async announce(instance, generations) {
      registry.set(instance, [...generations]);
    },
    async withdraw(instance) {
      registry.delete(instance);
    },
    async inUse(generation) {
      return [...registry.values()].some((used) => used.includes(generation));
    },
  };
}

const collections = projectors.map((p) => p.collection);

describe('a replay where removing a generation would disturb its users', () => {
  let dir: string;
  let log: EventLog;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-users-'));
    log = createSqliteEventLog(join(dir, 'events.sqlite'));
    await appendProjectHistory(log, { projects: 40, steps: 800, seed: 12 });
    const live = createSqliteReadStore(generationPath(dir, 0));
    for (const p of projectors) await createProjectorRunner(log, live, p).catchUp();
    await live.close();
  });
  afterEach(async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function serve(registry: Announcements, pollMs: number): Promise<GenerationalReadStore> {
    const opened = await openGenerationalReadStore(announcing(dir, registry), { collections, pollMs });
    assert.ok(opened.ok, opened.ok ? '' : opened.reason);
    return opened.value;
  }

  it('removes the old generation only after the serving store has moved off it', async () => {
    const registry: Announcements = new Map();
    const serving = await serve(registry, 20);
    try {
      assert.deepEqual([...registry.values()], [[0]], 'the serving store announces the generation it opened');
      const before = await dumpReadModels(serving.reader);
      const removals: { generation: number; servingThen: number }[] = [];
      const notes: string[] = [];
      const outcome = await replayReadModels({
        space: announcing(dir, registry, (generation) =>
          removals.push({ generation, servingThen: serving.generations().serving }),
        ),
        log,
        projectors,
        batchSize: 100,
        onNote: (message) => notes.push(message),
      });
      assert.ok(outcome.ok, outcome.ok ? '' : outcome.reason);
      assert.equal(outcome.leftBehind, null);
      assert.deepEqual(
        removals,
        [{ generation: 0, servingThen: 1 }],
        'generation 0 was removed once reads had moved to 1',
      );
      assert.deepEqual(notes, [
        'switched to readmodels-1.sqlite (generation 1)',
        'waiting for processes still using readmodels.sqlite to move to generation 1',
        'removed readmodels.sqlite (generation 0)',
      ]);
      assert.deepEqual([...registry.values()], [[1]]);
      assert.equal(firstDifference(await dumpReadModels(serving.reader), before), null);
    } finally {
      await serving.close();
    }
    assert.equal(registry.size, 0, 'a closed store withdraws its announcement');
  });

  it('leaves a generation still in use in place, and the next replay removes it once it is free', async () => {
    const registry: Announcements = new Map();
    // This store does not look at the pointer by itself during the replay: it stays on generation 0.
    const serving = await serve(registry, 3_600_000);
    try {
      const before = await dumpReadModels(serving.reader);
      const first = await replayReadModels({
        space: announcing(dir, registry),
        log,
        projectors,
        releaseTimeoutMs: 300,
      });
      assert.ok(first.ok, first.ok ? '' : first.reason);
      assert.equal(first.generation, 1);
      assert.match(first.leftBehind ?? '', /^readmodels\.sqlite \(still in use after 0\.3 s\)$/);
      assert.ok(existsSync(generationPath(dir, 0)), 'generation 0 is kept for the store that still reads it');
      assert.deepEqual(serving.generations(), { serving: 0, newest: 0 });
      assert.equal(firstDifference(await dumpReadModels(serving.reader), before), null);

      // While the old generation is still in use, a replay leaves it alone and says so.
      const notes: string[] = [];
      const second = await replayReadModels({
        space: announcing(dir, registry),
        log,
        projectors,
        releaseTimeoutMs: 300,
        onNote: (m) => notes.push(m),
      });
      assert.ok(second.ok, second.ok ? '' : second.reason);
      assert.equal(second.generation, 2);
      assert.ok(notes.includes('left readmodels.sqlite, an old generation a process still uses'), notes.join('\n'));
      assert.ok(existsSync(generationPath(dir, 0)));

      // The store moves on; the next replay removes what nobody uses any more.
      await serving.refresh();
      assert.deepEqual(serving.generations(), { serving: 2, newest: 2 });
      assert.deepEqual([...registry.values()], [[2]]);
      // From here it follows the pointer again, so the replay's wait for generation 2 to be free ends.
      const following = setInterval(() => void serving.refresh(), 20);
      const third = await replayReadModels({
        space: announcing(dir, registry),
        log,
        projectors,
        onNote: (m) => notes.push(m),
      }).finally(() => clearInterval(following));
      assert.ok(third.ok && third.leftBehind === null, third.ok ? String(third.leftBehind) : third.reason);
      assert.ok(notes.includes('removed readmodels.sqlite, an old generation'), notes.join('\n'));
      assert.ok(!existsSync(generationPath(dir, 0)));
      await serving.refresh();
      assert.equal(serving.generations().serving, 3);
      assert.equal(firstDifference(await dumpReadModels(serving.reader), before), null);
    } finally {
      await serving.close();
    }
  });
});
