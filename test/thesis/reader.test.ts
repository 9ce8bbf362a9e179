import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'vitest';
import { commandEventId } from '../../events/ids.ts';
import { streams } from '../../events/streams.ts';
import { thesisEvent, thesisJobsStream } from '../../events/thesis.ts';
import { createThesisReader } from '../../ingest/thesis-reader/reader.ts';
import { createOpenJobsLedger } from '../../service/thesis/jobs.ts';
import { contractOf, harness, item, scriptedSource, type Harness } from './helpers.ts';

const MINUTE = 60_000;
const ok = () => ({ ok: true as const, items: [item(1)], moreAtSource: false, sourceUrl: 'https://source.example/t' });

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

describe('thesis reader', () => {
  it('two readers on one log start a job once and read the source once', async () => {
    const { source, reads } = scriptedSource(ok);
    h = await harness({ source });
    const second = createThesisReader({
      log: h.log,
      store: h.store,
      source,
      heartbeat: h.heartbeat,
      now: h.clock.now,
      logger: h.logger,
    });
    await h.feed.request(await h.member('ann'), { contract: contractOf(1) });
    const moved = await Promise.all([h.reader.runOnce(), second.runOnce()]);
    assert.deepEqual(reads, [contractOf(1)]);
    const types = (await h.log.readStream(streams.thesis(contractOf(1)))).map((e) => e.type);
    assert.deepEqual(types, ['thesis.requested', 'thesis.started', 'thesis.saved']);
    assert.ok(moved.includes(1));
  });

  it('frees a slot whose request never landed, but only after the grace period', async () => {
    const { source, reads } = scriptedSource(ok);
    h = await harness({ source });
    // A POST that took its slot and stopped before appending the request.
    const ledger = createOpenJobsLedger(h.log);
    const taken = await ledger.take({
      requestId: commandEventId(),
      contract: contractOf(2),
      at: h.clock.now().toISOString(),
    });
    assert.ok(taken.ok);
    assert.equal(await h.reader.runOnce(), 0, 'maybe the request is about to land');
    assert.equal((await ledger.openJobs()).length, 1);
    h.clock.advance(2 * MINUTE);
    assert.equal(await h.reader.runOnce(), 1);
    assert.equal((await ledger.openJobs()).length, 0);
    assert.deepEqual(reads, []);
    const closed = (await h.log.readStream(thesisJobsStream(0))).filter((e) => e.type === 'thesis.job.closed');
    assert.equal((closed[0]?.data as { reason: string }).reason, 'abandoned');
  });

  it('fails a job left running by a stopped reader after five minutes, without reading again', async () => {
    const { source, reads } = scriptedSource(ok);
    h = await harness({ source });
    await h.feed.request(await h.member('ann'), { contract: contractOf(3) });
    const [job] = await createOpenJobsLedger(h.log).openJobs();
    // A reader that appended the start and then stopped.
    const revision = await h.log.streamRevision(streams.thesis(contractOf(3)));
    const started = thesisEvent('thesis.started', {
      contract: contractOf(3),
      requestId: job!.requestId,
      at: h.clock.now().toISOString(),
    });
    assert.ok(
      (await h.log.append(streams.thesis(contractOf(3)), [{ id: commandEventId(), ...started }], revision!)).ok,
    );

    assert.equal(await h.reader.runOnce(), 0, 'another reader may still be reading');
    h.clock.advance(5 * MINUTE);
    assert.equal(await h.reader.runOnce(), 1);
    assert.deepEqual(reads, []);
    const status = await h.feed.status(await h.member('ann'), { contract: contractOf(3) });
    assert.ok(status.ok);
    assert.equal(status.value.status, 'failed');
    assert.equal(status.value.lastOutcome, 'the reader stopped before the read finished');
    assert.equal((await createOpenJobsLedger(h.log).openJobs()).length, 0);
  });

  it('a source adapter that throws becomes a failed job; the reader carries on', async () => {
    let calls = 0;
    const source = {
      async read(contract: string) {
        calls += 1;
        if (contract === contractOf(4)) throw new Error('SECRET-THESIS-boom');
        return ok();
      },
    };
    h = await harness({ source });
    const ann = await h.member('ann');
    await h.feed.request(ann, { contract: contractOf(4) });
    await h.feed.request(ann, { contract: contractOf(5) });
    assert.equal(await h.reader.runOnce(), 2);
    assert.equal(calls, 2);
    const [four, five] = [
      await h.feed.status(ann, { contract: contractOf(4) }),
      await h.feed.status(ann, { contract: contractOf(5) }),
    ];
    assert.ok(four.ok && five.ok);
    assert.equal(four.value.status, 'failed');
    assert.equal(four.value.lastOutcome, 'source adapter failed unexpectedly');
    assert.equal(five.value.status, 'ready');
    assert.ok(!JSON.stringify(h.logger.lines).includes('SECRET'), 'the error message is not logged');
  });

  it('run() beats the heartbeat, works the queue as requests arrive and ends the heartbeat when stopped', async () => {
    const { source, reads } = scriptedSource(ok);
    h = await harness({ source, readerAlive: false });
    const reader = createThesisReader({
      log: h.log,
      store: h.store,
      source,
      heartbeat: h.heartbeat,
      now: h.clock.now,
      logger: h.logger,
      idleWaitMs: 20,
    });
    const stop = new AbortController();
    const running = reader.run(stop.signal);
    try {
      const ann = await h.member('ann');
      let queued = await h.feed.request(ann, { contract: contractOf(6) });
      for (let i = 0; i < 100 && !queued.ok; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        queued = await h.feed.request(ann, { contract: contractOf(6) });
      }
      assert.ok(queued.ok, 'the reader announced itself');
      for (let i = 0; i < 200 && reads.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      let status = await h.feed.status(ann, { contract: contractOf(6) });
      for (let i = 0; i < 200 && status.ok && status.value.status !== 'ready'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        status = await h.feed.status(ann, { contract: contractOf(6) });
      }
      assert.ok(status.ok);
      assert.equal(status.value.status, 'ready');
      assert.equal(status.value.workerAvailable, true);
    } finally {
      stop.abort();
      await running;
    }
    assert.equal(await h.heartbeat.isAlive(), false);
    assert.deepEqual(reads, [contractOf(6)]);
  });
});

describe('open-jobs ledger', () => {
  it('moves to a new epoch stream only when no job is open, and a fresh process finds the newest one', async () => {
    h = await harness({ source: scriptedSource(ok).source });
    const at = h.clock.now().toISOString();
    const ledger = createOpenJobsLedger(h.log, { cap: 3, rotateAfter: 4 });
    for (let round = 0; round < 6; round++) {
      const jobs: { epoch: number; requestId: string }[] = [];
      for (let i = 0; i < 3; i++) {
        const requestId = commandEventId();
        const r = await ledger.take({ requestId, contract: contractOf(i), at });
        assert.ok(r.ok);
        jobs.push({ epoch: r.epoch, requestId });
      }
      assert.deepEqual(await ledger.take({ requestId: commandEventId(), contract: contractOf(9), at }), {
        ok: false,
        reason: 'full',
      });
      assert.equal(new Set(jobs.map((j) => j.epoch)).size, 1, 'a round never spans a rotation');
      for (const job of jobs) await ledger.close(job, 'finished', at);
      await ledger.close(jobs[0]!, 'finished', at); // closing twice changes nothing
      assert.deepEqual(await ledger.openJobs(), []);
    }
    // Each epoch holds 3 opens + 3 closes (+ rotation): every round after the first rotated.
    const epochs: number[] = [];
    const log = h.log;
    for (let e = 0; (await log.streamRevision(thesisJobsStream(e))) !== null; e++) epochs.push(e);
    assert.deepEqual(epochs, [0, 1, 2, 3, 4, 5]);
    for (const e of epochs.slice(0, -1)) {
      const types = (await log.readStream(thesisJobsStream(e))).map((ev) => ev.type);
      assert.equal(types[types.length - 1], 'thesis.jobs.rotated');
    }

    const opened = await ledger.take({ requestId: commandEventId(), contract: contractOf(1), at });
    assert.deepEqual(opened, { ok: true, epoch: 6 });
    const other = createOpenJobsLedger(h.log, { cap: 3, rotateAfter: 4 });
    assert.equal((await other.openJobs()).length, 1, 'another process finds the open job in the newest epoch');
    assert.deepEqual(await other.take({ requestId: commandEventId(), contract: contractOf(2), at }), {
      ok: true,
      epoch: 6,
    });
  });
});
