import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createProjectorThread, WORKER_MAX_OLD_GENERATION_MB } from '../../bin/commands/projector-thread.ts';
import { createSupervisor } from '../../service/background.ts';
import { manualClock, stateLog } from './support.ts';

const standIn = new URL('./fixtures/worker-stand-in.ts', import.meta.url);

/** A thread over the stand-in worker, and a promise of the first state it posts. */
function thread(mode: string, stopGraceMs = 5_000) {
  let posted: () => void = () => undefined;
  const firstState = new Promise<void>((resolve) => (posted = resolve));
  const projectorThread = createProjectorThread({
    workerUrl: standIn,
    workerData: { mode },
    stopGraceMs,
    abortGraceMs: 20,
    onChange: () => posted(),
  });
  return { projectorThread, firstState };
}

describe('the projector thread of serve', () => {
  it('reports the states its worker posts, and clears them when the worker stops', async () => {
    const { projectorThread, firstState } = thread('stops');
    const stop = new AbortController();
    const running = projectorThread.run(stop.signal);
    try {
      await firstState;
      assert.deepEqual(Object.keys(projectorThread.status()), ['projector:projects']);
      assert.equal(projectorThread.status()['projector:projects']!.state, 'running');
    } finally {
      stop.abort();
      await running;
    }
    assert.deepEqual(projectorThread.status(), {});
  });

  it('fails when its worker dies, so the supervisor restarts it and /readyz shows it retrying', async () => {
    const manual = manualClock();
    const states = stateLog();
    const stop = new AbortController();
    const supervisor = createSupervisor({
      signal: stop.signal,
      clock: manual.clock,
      logger: { info() {}, warn() {} },
      onChange: states.onChange,
    });
    const { projectorThread } = thread('fails');
    await assert.rejects(projectorThread.run(new AbortController().signal), /stand-in worker failed/);
    const supervised = supervisor.supervise('projectors', (signal) => projectorThread.run(signal));
    await states.until('projectors', 'retrying');
    assert.equal(supervisor.status().projectors!.state, 'retrying');
    stop.abort();
    await supervised;
  });

  it("bounds its worker's V8 heap, so the runner's heap guard commits at half of that bound (issue 12)", async () => {
    let limitMb = 0;
    let reported: () => void = () => undefined;
    const heapReported = new Promise<void>((resolve) => (reported = resolve));
    const projectorThread = createProjectorThread({
      workerUrl: standIn,
      workerData: { mode: 'heap' },
      onCommit: (collection, checkpoint) => {
        if (collection !== 'heap') return;
        limitMb = checkpoint;
        reported();
      },
    });
    const stop = new AbortController();
    const running = projectorThread.run(stop.signal);
    try {
      await heapReported;
    } finally {
      stop.abort();
      await running;
    }
    // The limit is the old generation's bound plus the young generation's share.
    assert.ok(limitMb >= WORKER_MAX_OLD_GENERATION_MB, `heap limit ${limitMb} MB`);
    assert.ok(limitMb < WORKER_MAX_OLD_GENERATION_MB + 256, `heap limit ${limitMb} MB`);
  });

  it('terminates a worker that cannot stop because its thread is busy catching up', async () => {
    const { projectorThread, firstState } = thread('busy', 20);
    const stop = new AbortController();
    const running = projectorThread.run(stop.signal);
    try {
      await firstState;
    } finally {
      stop.abort();
      await running;
    }
    assert.deepEqual(projectorThread.status(), {});
  });
});

describe('a projector worker stopped in the middle of a MongoDB commit', () => {
  it('aborts its transaction and ends its session before it exits, rather than being terminated with the transaction open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pb-mid-commit-'));
    const posted: string[] = [];
    let started: () => void = () => undefined;
    const commitStarted = new Promise<void>((resolve) => (started = resolve));
    const projectorThread = createProjectorThread({
      workerUrl: new URL('./fixtures/worker-mid-commit.ts', import.meta.url),
      workerData: { dir },
      stopGraceMs: 50,
      abortGraceMs: 10_000,
      onCommit: (collection) => {
        posted.push(collection);
        if (collection === 'commit-started') started();
      },
    });
    const stop = new AbortController();
    const running = projectorThread.run(stop.signal);
    try {
      await commitStarted;
    } finally {
      stop.abort();
      await running;
      rmSync(dir, { recursive: true, force: true });
    }
    // Earlier sessions (the upgrade-time checks' short transactions) ended normally; the commit's was aborted.
    assert.equal(posted.length, 2, posted.join(' | '));
    assert.equal(posted[0], 'commit-started');
    assert.match(posted[1]!, /^sessions:(endSession,)*abortTransaction,endSession$/);
  });
});
