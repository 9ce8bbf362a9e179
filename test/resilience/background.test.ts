import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { backoffDelay, createSupervisor, DEFAULT_BACKOFF } from '../../service/background.ts';
import { createHealth } from '../../service/health.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';
import { createThesisReader } from '../../ingest/thesis-reader/reader.ts';
import { contractOf, harness, item, scriptedSource } from '../thesis/helpers.ts';
import { flakyEventLog, flakyReadStore, manualClock, stateLog, type Fault } from './support.ts';

const quietLogger = () => {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  return {
    lines,
    info: (fields: Record<string, unknown>, message: string) => void lines.push({ level: 'info', fields, message }),
    warn: (fields: Record<string, unknown>, message: string) => void lines.push({ level: 'warn', fields, message }),
  };
};

describe('background supervisor', () => {
  it('backs off exponentially with jitter, up to the cap', () => {
    const policy = { baseMs: 100, capMs: 1000, recoveredAfterMs: 500 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 9].map((n) => backoffDelay(n, policy, () => 0)),
      [50, 100, 200, 400, 500, 500],
    );
    assert.deepEqual(
      [1, 2, 3, 4, 5, 9].map((n) => backoffDelay(n, policy, () => 0.999999)).map(Math.round),
      [100, 200, 400, 800, 1000, 1000],
    );
  });

  it('restarts a failing loop with growing delays, logs once per state change, and recovers', async () => {
    const manual = manualClock();
    const states = stateLog();
    const logger = quietLogger();
    const stop = new AbortController();
    const supervisor = createSupervisor({
      signal: stop.signal,
      clock: manual.clock,
      logger,
      random: () => 0.5,
      onChange: states.onChange,
    });
    let attempts = 0;
    const loop = (signal: AbortSignal) => {
      attempts += 1;
      // Fails four times (the fourth synchronously), then runs until stopped.
      if (attempts < 4) return Promise.reject(new Error('SECRET store detail'));
      if (attempts === 4) throw new Error('SECRET thrown');
      return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    };
    const supervised = supervisor.supervise('demo', loop);
    const delays: number[] = [];
    // A restarted attempt also starts its quiet-period timer; the backoff sleeps are the others.
    const nextBackoff = async () => {
      for (;;) {
        const ms = await manual.nextSleep();
        if (ms !== DEFAULT_BACKOFF.recoveredAfterMs) return ms;
      }
    };
    for (let failure = 1; failure <= 4; failure++) {
      const delay = await nextBackoff();
      delays.push(delay);
      assert.equal(supervisor.status().demo!.state, 'retrying');
      assert.equal(supervisor.status().demo!.failures, failure);
      manual.advance(delay);
    }
    // Equal jitter at 0.5: three quarters of base · 2^(n-1).
    assert.deepEqual(
      delays,
      [1, 2, 4, 8].map((f) => 0.75 * DEFAULT_BACKOFF.baseMs * f),
    );
    // The fifth attempt runs; it counts as recovered once it has outlived the quiet period.
    await states.until('demo', 'retrying');
    while (attempts < 5) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(supervisor.status().demo!.state, 'retrying');
    manual.advance(DEFAULT_BACKOFF.recoveredAfterMs - 1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(supervisor.status().demo!.state, 'retrying', 'not before the quiet period is over');
    const recovered = states.next('demo', 'running');
    manual.advance(1);
    await recovered;
    assert.deepEqual(supervisor.status().demo!.failures, 0);
    stop.abort();
    await supervised;
    assert.deepEqual(
      states.changes.map((c) => c.state),
      ['running', 'retrying', 'running', 'stopped'],
    );
    assert.equal(attempts, 5);
    assert.deepEqual(
      logger.lines.map((l) => [l.level, l.message]),
      [
        ['warn', 'background loop failed; retrying with backoff'],
        ['info', 'background loop recovered'],
      ],
    );
    assert.deepEqual(logger.lines[0]!.fields, { loop: 'demo', reason: 'error', errorName: 'Error' });
    assert.ok(!JSON.stringify(logger.lines).includes('SECRET'), 'error messages are never logged');
  });

  it('treats a loop that returns without being stopped as failed', async () => {
    const manual = manualClock();
    const stop = new AbortController();
    const supervisor = createSupervisor({ signal: stop.signal, clock: manual.clock, logger: quietLogger() });
    let attempts = 0;
    const supervised = supervisor.supervise('ends', async () => {
      attempts += 1;
    });
    await manual.nextSleep();
    assert.equal(supervisor.status().ends!.state, 'retrying');
    stop.abort();
    await supervised;
    assert.equal(attempts, 1);
    assert.equal(supervisor.status().ends!.state, 'stopped');
  });
});

async function projectorsThroughAFault(fault: Fault) {
  const dir = mkdtempSync(join(tmpdir(), 'pb-resilience-'));
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  const flaky = flakyReadStore(createSqliteReadStore(join(dir, 'read.sqlite')));
  const manual = manualClock();
  const states = stateLog();
  const stop = new AbortController();
  const supervisor = createSupervisor({
    signal: stop.signal,
    clock: manual.clock,
    logger: quietLogger(),
    onChange: states.onChange,
  });
  const health = createHealth({
    log,
    store: flaky.store,
    collections: projectors.map((p) => p.collection),
    background: supervisor.status,
  });
  const running = projectors.map((p) =>
    supervisor.supervise(`projector:${p.collection}`, (signal) =>
      createProjectorRunner(log, flaky.store, p, { batchSize: 50, idleWaitMs: 5 }).run(signal),
    ),
  );
  try {
    await appendProjectHistory(log, { projects: 40, steps: 300, seed: 3, prefix: 'a' });
    flaky.state.fault = fault;
    await appendProjectHistory(log, { projects: 40, steps: 300, seed: 4, prefix: 'b' });
    await states.until('projector:projects', 'retrying');
    const degraded = await health.ready();
    assert.equal(degraded.status, 'degraded');
    assert.equal(degraded.ready, true, 'reads are still served: the instance stays in rotation');
    assert.equal(degraded.background['projector:projects']!.state, 'retrying');
    // Keep failing through a few restarts, then recover.
    for (let i = 0; i < 3; i++) manual.advance(DEFAULT_BACKOFF.capMs);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(flaky.state.failures >= 2);
    flaky.state.fault = null;
    await appendProjectHistory(log, { projects: 40, steps: 200, seed: 5, prefix: 'c' });
    const head = await log.headPosition();
    // Every restarted loop runs again after its backoff; once all are at the head, let the quiet period pass.
    for (;;) {
      manual.advance(DEFAULT_BACKOFF.capMs);
      const checkpoints = await Promise.all(projectors.map(async (p) => flaky.store.checkpoint(p.collection)));
      if (checkpoints.every((c) => c >= head)) break;
      await new Promise<void>((resolve) => {
        flaky.state.onCommit = resolve;
      });
    }
    manual.advance(DEFAULT_BACKOFF.recoveredAfterMs);
    for (const p of projectors) await states.settled(`projector:${p.collection}`, 'running');
    const recovered = await health.ready();
    assert.equal(recovered.status, 'ready');
    assert.ok(Object.values(recovered.background).every((loop) => loop.state === 'running' && loop.failures === 0));
    assert.ok(Object.values(recovered.lag).every((lag) => lag === 0));

    // Nothing lost, nothing applied twice: the same documents as a clean projection of the same log.
    const clean = createSqliteReadStore(join(dir, 'clean.sqlite'));
    for (const p of projectors) await createProjectorRunner(log, clean, p).catchUp();
    assert.equal(firstDifference(await dumpReadModels(flaky.store), await dumpReadModels(clean)), null);
    await clean.close();
    return states.changes;
  } finally {
    stop.abort();
    await Promise.all(running);
    await log.close();
    await flaky.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('projectors under a failing read store', () => {
  it('keep running through commits that fail before writing; /readyz says degraded, then ready; nothing lost', async () => {
    const changes = await projectorsThroughAFault('before');
    assert.ok(changes.some((c) => c.state === 'retrying'));
  });

  it('keep running through commits that fail after writing (lost replies); nothing is applied twice', async () => {
    const changes = await projectorsThroughAFault('after');
    assert.ok(changes.some((c) => c.state === 'retrying'));
  });
});

describe('the thesis reader under a failing event log', () => {
  it('keeps running through the outage, then works the queue; /readyz says degraded, then ready', async () => {
    let readDone: () => void = () => undefined;
    const read = new Promise<void>((resolve) => (readDone = resolve));
    const { source, reads } = scriptedSource(() => {
      readDone();
      return { ok: true, items: [item(1)], moreAtSource: false, sourceUrl: 'https://source.example/t' };
    });
    const h = await harness({ source });
    const flaky = flakyEventLog(h.log);
    const manual = manualClock();
    const states = stateLog();
    const logger = quietLogger();
    const stop = new AbortController();
    const supervisor = createSupervisor({
      signal: stop.signal,
      clock: manual.clock,
      logger,
      onChange: states.onChange,
    });
    const health = createHealth({ log: h.log, store: h.store, collections: [], background: supervisor.status });
    const reader = createThesisReader({
      log: flaky.log,
      store: h.store,
      source,
      heartbeat: h.heartbeat,
      now: h.clock.now,
      logger: h.logger,
      idleWaitMs: 5,
    });
    const queued = await h.feed.request(await h.member('ann'), { contract: contractOf(7) });
    assert.ok(queued.ok && queued.value.httpStatus === 202);
    flaky.state.failing = true;
    const running = supervisor.supervise('thesis-reader', (signal) => reader.run(signal));
    try {
      await states.until('thesis-reader', 'retrying');
      assert.equal((await health.ready()).status, 'degraded');
      manual.advance(DEFAULT_BACKOFF.capMs);
      assert.deepEqual(reads, [], 'nothing is read while the log cannot be');

      flaky.state.failing = false;
      const recovered = states.next('thesis-reader', 'running');
      manual.advance(DEFAULT_BACKOFF.capMs);
      await read;
      manual.advance(DEFAULT_BACKOFF.recoveredAfterMs);
      await recovered;
      assert.equal((await health.ready()).status, 'ready');
      assert.deepEqual(reads, [contractOf(7)], 'the queued job is read exactly once');
      assert.ok(flaky.state.failures >= 1);
      assert.deepEqual(
        logger.lines.map((l) => l.message),
        ['background loop failed; retrying with backoff', 'background loop recovered'],
      );
      assert.ok(!h.logger.lines.some((l) => l.level === 'error'), 'the reader itself no longer logs every failed pass');
    } finally {
      stop.abort();
      await running;
      await h.close();
    }
  });
});
