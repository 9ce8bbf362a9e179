import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { parseConfig } from '../../config/config.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import {
  acquireReplayLock,
  generationPath,
  listGenerations,
  readPointer,
  writePointer,
} from '../../readmodels/sqlite/generations.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { openStores } from '../../service/stores.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';
import { eventually } from './support.ts';

const configFor = (dir: string) => {
  const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.config;
};

describe('read-model generations', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-generations-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads generation 0 without a pointer, and refuses a pointer that is not a number or names a missing file', async () => {
    assert.deepEqual(readPointer(dir), { ok: true, generation: 0 });
    writePointer(dir, 7);
    assert.deepEqual(readPointer(dir), { ok: true, generation: 7 });
    await assert.rejects(
      openStores(configFor(dir)),
      /names generation 7, but .*readmodels-7\.sqlite is missing; run 'pulseboard replay'/,
    );
    writeFileSync(join(dir, 'readmodels.current'), 'seven\n');
    const bad = readPointer(dir);
    assert.equal(bad.ok, false);
    await assert.rejects(openStores(configFor(dir)), /does not hold a generation number/);
  });

  it('moves reads to a new generation only once it has caught up, and moves the projectors at once', async () => {
    const log = createSqliteEventLog(join(dir, 'events.sqlite'));
    await appendProjectHistory(log, { projects: 40, steps: 600, seed: 5 });
    await log.close();
    const stores = await openStores(configFor(dir), { pollMs: 60_000 });
    try {
      await stores.catchUp();
      const live = await stores.store.checkpoint(PROJECTS_COLLECTION);
      assert.ok(live > 0);

      // A new generation that has not folded anything yet is named live.
      await createSqliteReadStore(generationPath(dir, 1)).close();
      writePointer(dir, 1);

      await stores.refreshGenerations();
      assert.deepEqual(stores.generations(), { serving: 0, newest: 1 }, 'reads stay on the generation that is ahead');
      assert.equal(await stores.store.checkpoint(PROJECTS_COLLECTION), live);

      // The projectors write to the newest generation; once it has caught up, reads follow.
      await stores.catchUp();
      await stores.refreshGenerations();
      assert.deepEqual(stores.generations(), { serving: 1, newest: 1 });
      assert.equal(await stores.store.checkpoint(PROJECTS_COLLECTION), live);

      const reference = createSqliteReadStore(join(dir, 'reference.sqlite'));
      try {
        for (const p of projectors) await createProjectorRunner(stores.log, reference, p).catchUp();
        assert.equal(firstDifference(await dumpReadModels(stores.store), await dumpReadModels(reference)), null);
      } finally {
        await reference.close();
      }
    } finally {
      await stores.close();
    }
  });

  it('lets a running projector finish on the retired generation and resume on the new one', async () => {
    const stores = await openStores(configFor(dir), { pollMs: 10 });
    const stop = new AbortController();
    const running = stores.runners.map((r) => r.run(stop.signal));
    try {
      await appendProjectHistory(stores.log, { projects: 30, steps: 300, seed: 6 });
      const head = await stores.log.headPosition();
      assert.ok(await eventually(async () => (await stores.store.checkpoint(PROJECTS_COLLECTION)) === head));

      createSqliteReadStore(generationPath(dir, 1))
        .close()
        .catch(() => undefined);
      writePointer(dir, 1);
      await appendProjectHistory(stores.log, { projects: 30, steps: 200, seed: 7, prefix: 'n' });
      const later = await stores.log.headPosition();
      assert.ok(await eventually(() => stores.generations()?.serving === 1));
      assert.ok(await eventually(async () => (await stores.store.checkpoint(PROJECTS_COLLECTION)) === later));
      assert.deepEqual(listGenerations(dir), [0, 1]);
    } finally {
      stop.abort();
      await Promise.all(running);
      await stores.close();
    }
  });

  it('allows one replay at a time, naming the holder, until it releases the lock', () => {
    const first = acquireReplayLock(dir);
    assert.ok(first.ok);
    assert.equal(first.held(), true);
    const second = acquireReplayLock(dir);
    assert.equal(second.ok, false);
    assert.match(second.ok ? '' : second.reason, new RegExp(`another replay is running \\(pid ${process.pid}\\)`));
    first.release();
    assert.equal(first.held(), false);
    const third = acquireReplayLock(dir);
    assert.ok(third.ok, 'released, the lock can be taken again');
    third.release();
  });
});
