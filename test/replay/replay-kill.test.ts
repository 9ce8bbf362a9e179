import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { acquireReplayLock } from '../../readmodels/sqlite/generations.ts';
import { createHarness } from '../support/harness.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';
import { eventually, startReplay } from './support.ts';

describe('an interrupted replay', () => {
  it('leaves the live generation serving unchanged when killed, and the next replay succeeds', async () => {
    const h = await createHarness();
    const stop = new AbortController();
    let background: Promise<void>[] = [];
    try {
      await appendProjectHistory(h.stores.log, { projects: 120, steps: 2500, seed: 41 });
      const key = await h.key('reader', ['allow']);
      await h.stores.catchUp();
      background = h.stores.runners.map((r) => r.run(stop.signal));
      const before = await dumpReadModels(h.stores.store);
      const board = (await h.get('/v1/projects?page=2', key)).json();
      const delta = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=50', key)).json();

      // SIGKILL at the 20th progress line: well inside the projection, long before any switch.
      const killed = startReplay(h.dir, {
        batchSize: 20,
        onProgress: (line, child) => {
          if (line === 20) child.kill('SIGKILL');
        },
      });
      const outcome = await killed.exited;
      assert.equal(outcome.signal, 'SIGKILL', `the replay ended before the kill: ${outcome.stderr}`);
      assert.doesNotMatch(outcome.stderr, /switched/);
      assert.ok(existsSync(join(h.dir, 'readmodels-1.sqlite')), 'the killed replay left its partial generation');
      assert.ok(!existsSync(join(h.dir, 'readmodels.current')), 'the pointer was never written');

      await h.stores.refreshGenerations();
      assert.deepEqual(h.stores.generations(), { serving: 0, newest: 0 });
      assert.equal(firstDifference(await dumpReadModels(h.stores.store), before), null);
      const boardAfter = await h.get('/v1/projects?page=2', key);
      assert.equal(boardAfter.status, 200);
      assert.deepEqual({ ...boardAfter.json(), readAt: null }, { ...board, readAt: null });
      const deltaAfter = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=50', key)).json();
      assert.deepEqual({ ...deltaAfter, readAt: null }, { ...delta, readAt: null });

      // The next replay takes over the dead replay's lock, removes its partial file and switches.
      const again = await startReplay(h.dir, { batchSize: 200 }).exited;
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stderr, /removed readmodels-1\.sqlite, left by an interrupted replay/);
      assert.match(again.stderr, /switched to readmodels-1\.sqlite/);
      assert.ok(
        await eventually(async () => (await h.stores.refreshGenerations(), h.stores.generations()?.serving === 1)),
      );
      assert.equal(firstDifference(await dumpReadModels(h.stores.store), before), null);
      assert.ok(!existsSync(join(h.dir, 'readmodels.sqlite')));
      const lock = acquireReplayLock(h.dir);
      assert.ok(lock.ok, 'the replay released its lock');
      lock.release();
      const deltaSwitched = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=50', key)).json();
      assert.deepEqual({ ...deltaSwitched, readAt: null }, { ...delta, readAt: null });
    } finally {
      stop.abort();
      await Promise.all(background);
      await h.close();
    }
  });
});
