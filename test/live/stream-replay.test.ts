import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { eventually, startReplay, stopReplay, type ReplayChild } from '../replay/support.ts';
import { createHarness } from '../support/harness.ts';
import { appendSightings, cursorPosition, openStream, type SseClient, type SseEvent } from './support.ts';

/**
 * Writes in all: one append, one projector commit and one streamed row each. On PostgreSQL every one is
 * a few transactions on a server (about ten times the embedded cost), so the same phases run on a fifth
 * of the volume there; order, gaps and duplicates are checked the same way on both.
 */
const TOTAL = process.env['PULSEBOARD_TEST_ENGINE'] === 'postgres' ? 2_000 : 10_000;
/** A tenth of the writes: the phases below are counted in tenths. */
const PART = TOTAL / 10;

describe('change stream across pulseboard replay and a reconnect', () => {
  it('delivers every write (10,000; 2,000 on PostgreSQL) in order, none twice and none missed, across a replay and a Last-Event-ID reconnect', async () => {
    const h = await createHarness();
    const stop = new AbortController();
    let background: Promise<void>[] = [];
    let replay: ReplayChild | null = null;
    let first: SseClient | null = null;
    let second: SseClient | null = null;
    try {
      const key = await h.key('mirror');
      await h.stores.catchUp();
      // Projectors follow the log in the background, as `serve` runs them; their commits wake the stream.
      background = h.stores.runners.map((r) => r.run(stop.signal));
      const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `${base}/v1/projects/changes?since=now`;
      const generationBefore = h.stores.generations()!.serving;

      first = await openStream(url, key);
      assert.equal(first.status, 200);
      await appendSightings(h.stores.log, { first: 0, count: 4 * PART, prefix: 'w' });
      await first.rows(4 * PART);

      // A replay rebuilds the read models in a child process while writes go on.
      replay = startReplay(h.dir, { batchSize: 2 * PART, env: h.engineEnv });
      await appendSightings(h.stores.log, { first: 4 * PART, count: 3 * PART, prefix: 'w' });
      await first.rows(5 * PART);
      // The connection drops mid-flow; the client comes back with the id of the last event it got.
      first.abort();
      await first.ended;
      const received: SseEvent[] = first.events.filter((e) => e.data !== null);
      const lastId = received[received.length - 1]!.id!;
      second = await openStream(url, key, { 'last-event-id': lastId });
      assert.equal(second.status, 200);

      const run = await replay.exited;
      assert.equal(run.code, 0, run.stderr);
      assert.ok(
        await eventually(() => h.stores.generations()!.serving > generationBefore),
        'the service reads the new generation',
      );
      await appendSightings(h.stores.log, { first: 7 * PART, count: 3 * PART, prefix: 'w' });
      received.push(...(await second.rows(TOTAL - received.length)));

      assert.equal(received.length, TOTAL);
      const ids = received.map((e) => JSON.parse(e.data!).id as string);
      assert.deepEqual(
        ids,
        Array.from({ length: TOTAL }, (_, n) => `w-${n}`),
        'every write once, in write order',
      );
      let previous = -1;
      for (const [n, event] of received.entries()) {
        const at = cursorPosition(event.id!);
        assert.equal(at.i, ids[n], 'each id is the cursor after its own row');
        assert.ok(at.s > previous, 'positions only rise');
        previous = at.s;
      }
      // Nothing else arrived: one more write is the very next event of the second connection.
      const fromSecond = received.length - first.events.filter((e) => e.data !== null).length;
      await appendSightings(h.stores.log, { first: 0, count: 1, prefix: 'marker' });
      const after = await second.rows(fromSecond + 1);
      assert.equal(after.length, fromSecond + 1);
      assert.equal(JSON.parse(after[fromSecond]!.data!).id, 'marker-0');
    } finally {
      first?.abort();
      second?.abort();
      await stopReplay(replay);
      stop.abort();
      await Promise.all(background);
      await h.close();
    }
  });
});
