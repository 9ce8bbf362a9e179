import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { projectors } from '../../projectors/registry.ts';
import { createProjectionRunner } from '../../projectors/runner.ts';
import { createCommitWatch } from '../../service/commit-watch.ts';
import { eventually } from '../replay/support.ts';
import { createHarness } from '../support/harness.ts';
import { appendSightings } from './support.ts';

describe('commit watch', () => {
  it('wakes a long-poll through the per-process poll when the commit comes from a writer it hears nothing from', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('mirror');
      await h.stores.catchUp();
      const cursor = (await h.get('/v1/projects?since=now', key)).json().cursor as string;
      const answer = h.get(`/v1/projects?cursor=${cursor}&wait=30`, key);
      assert.ok(await eventually(() => h.services.commits.waiting() === 1));
      // Another writer (as another process would be): its commits are not signalled to this process.
      await appendSightings(h.stores.log, { first: 0, count: 1, prefix: 'elsewhere' });
      await createProjectionRunner(h.stores.log, h.stores.store, projectors).catchUp();
      const body = (await answer).json();
      assert.deepEqual(
        body.projects.map((p: { id: string }) => p.id),
        ['elsewhere-0'],
      );
    } finally {
      await h.close();
    }
  });

  it('reads the checkpoint once per signal however many wait, polls only while someone waits, and ends waits on close and abort', async () => {
    let checkpoint = 10;
    let reads = 0;
    const watch = createCommitWatch({
      readCheckpoint: async () => {
        reads += 1;
        return checkpoint;
      },
      pollMs: 20,
    });
    watch.notify();
    assert.ok(await eventually(() => reads === 1));
    const many = Array.from({ length: 500 }, () => watch.waitPast(10, { timeoutMs: 60_000 }));
    assert.equal(watch.waiting(), 500);
    const before = reads;
    checkpoint = 11;
    watch.notify();
    assert.deepEqual(new Set(await Promise.all(many)), new Set(['passed']));
    assert.ok(reads - before <= 2, `${reads - before} reads for 500 waiters`);
    // Already known to be past: answered without a read.
    assert.equal(await watch.waitPast(10, { timeoutMs: 60_000 }), 'passed');

    // No waiter: no polling.
    const idle = reads;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(reads, idle);
    // A waiter: the poll finds a commit nobody signalled.
    const polled = watch.waitPast(11, { timeoutMs: 60_000 });
    checkpoint = 12;
    assert.equal(await polled, 'passed');

    assert.equal(await watch.waitPast(12, { timeoutMs: 10 }), 'timeout');
    const gone = new AbortController();
    const aborted = watch.waitPast(12, { timeoutMs: 60_000, signal: gone.signal });
    gone.abort();
    assert.equal(await aborted, 'aborted');
    const held = watch.waitPast(12, { timeoutMs: 60_000 });
    watch.close();
    assert.equal(await held, 'closed');
    assert.equal(await watch.waitPast(0, { timeoutMs: 60_000 }), 'closed');
    assert.equal(watch.waiting(), 0);
  });
});
