/**
 * KurrentDB id markers have a bounded lifetime (eventstore/kurrentdb/idempotent-append.ts): they sit
 * in 2^18 bucket streams whose metadata carries the dedupe window as `$maxAge`, so within the window a
 * retried id is recognised, and after it a scavenge leaves the log with the events and one metadata
 * record per bucket written: no marker (the in-memory server models $maxAge and scavenging).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'vitest';
import { createKurrentDbEventLog } from '../../eventstore/kurrentdb/kurrentdb-event-log.ts';
import { ID_MARKER_TYPE, MARKER_BUCKETS, markerStream } from '../../eventstore/kurrentdb/idempotent-append.ts';
import type { NewEvent } from '../../eventstore/port.ts';
import { createFakeKurrentDbServer } from '../support/kurrentdb-fake.ts';

const HOUR = 3600;

for (const mode of ['atomic', 'unsupported'] as const) {
  it(`markers expire after the dedupe window and a scavenge removes them from the log (multiStreamAppend ${mode})`, async () => {
    const server = createFakeKurrentDbServer({ multiStreamAppend: mode });
    let clock = Date.parse('2026-11-26T00:00:00.000Z');
    server.now = () => clock;
    const log = createKurrentDbEventLog('kurrentdb://in-memory:2113?tls=false', {
      client: server.client(),
      dedupeWindowSeconds: HOUR,
    });
    try {
      const groups = Array.from({ length: 120 }, (_, i) => ({
        stream: `calls-${i % 4}`,
        events: [{ id: randomUUID(), type: 'vote.cast', data: { i } } satisfies NewEvent],
      }));
      await log.appendBatch(groups);
      const markers = () => server.records.filter((r) => r.type === ID_MARKER_TYPE).length;
      assert.equal(markers(), 120, 'one marker per event');
      assert.ok(groups.every((g) => /^pulseboard-ids-[0-9a-f]{5}$/.test(markerStream(g.events[0]!.id))));
      assert.ok(MARKER_BUCKETS === 2 ** 18);

      // Within the window, a redelivery is recognised.
      clock += (HOUR / 2) * 1000;
      const again = await log.appendBatch(groups);
      assert.ok(
        again.flat().every((e) => e.duplicate),
        'recognised within the window',
      );

      // Past it, a scavenge removes every marker; the events and their positions stay.
      clock += HOUR * 1000;
      const before = await log.readAll({ afterPosition: 0, limit: 1000 });
      server.scavenge();
      assert.equal(markers(), 0, 'no marker left after the window and a scavenge');
      assert.deepEqual(await log.readAll({ afterPosition: 0, limit: 1000 }), before);
      const buckets = new Set(groups.map((g) => markerStream(g.events[0]!.id))).size;
      const metadata = server.records.filter((r) => r.streamId.startsWith('$$pulseboard-ids-')).length;
      assert.equal(metadata, buckets, 'one lifetime record per bucket written');
      assert.equal(server.records.filter((r) => r.streamId.startsWith('calls-')).length, 120);
    } finally {
      await log.close();
    }
  });
}

for (const mode of ['atomic', 'unsupported'] as const) {
  it(`a restarted process reads each bucket's lifetime once and writes none a bucket already has (multiStreamAppend ${mode})`, async () => {
    const server = createFakeKurrentDbServer({ multiStreamAppend: mode });
    const open = () =>
      createKurrentDbEventLog('kurrentdb://in-memory:2113?tls=false', {
        client: server.client(),
        dedupeWindowSeconds: HOUR,
      });
    const ids = Array.from({ length: 80 }, () => randomUUID());
    const lifetimes = () => server.records.filter((r) => r.streamId.startsWith('$$pulseboard-ids-')).length;
    const first = open();
    try {
      await first.appendBatch(
        ids.map((id, i) => ({ stream: `calls-${i % 4}`, events: [{ id, type: 'vote.cast', data: { i } }] })),
      );
    } finally {
      await first.close();
    }
    const buckets = new Set(ids.map((id) => markerStream(id))).size;
    assert.equal(lifetimes(), buckets, 'one lifetime per bucket written');

    // The same ids into other streams after a restart: a marker each in the same buckets, no lifetime again.
    const restarted = open();
    try {
      server.resetCounts();
      await restarted.appendBatch(
        ids.map((id, i) => ({ stream: `pulse-${i % 4}`, events: [{ id, type: 'vote.cast', data: { i } }] })),
      );
      assert.equal(server.records.filter((r) => r.type === ID_MARKER_TYPE).length, 160, 'a marker per event');
      assert.equal(lifetimes(), buckets, 'no lifetime written again');
      assert.equal(server.calls.get('getStreamMetadata'), buckets, "each bucket's lifetime read once");
    } finally {
      await restarted.close();
    }
  });
}
