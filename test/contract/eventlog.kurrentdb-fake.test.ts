/**
 * The event-log contract, unchanged, against the real KurrentDB adapter over an in-memory stand-in
 * for the client library (test/support/kurrentdb-fake.ts): everything the adapter adds on top of the
 * server (idempotent ids through markers, batch appends, paging, filters, positions) runs here without
 * Docker. test/contract/eventlog.kurrentdb.test.ts runs the same suite against a real server.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import type { EventLog, NewEvent } from '../../eventstore/port.ts';
import { anyProjector, type Projector } from '../../projectors/projector.ts';
import { createProjectionRunner } from '../../projectors/runner.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { createKurrentDbEventLog } from '../../eventstore/kurrentdb/kurrentdb-event-log.ts';
import { markerStream } from '../../eventstore/kurrentdb/idempotent-append.ts';
import { createFakeKurrentDbServer } from '../support/kurrentdb-fake.ts';
import { eventLogContract } from './eventlog.contract.ts';

const URL = 'kurrentdb://in-memory:2113?tls=false';

// A 25.1+ server (marker writes joined in multi-stream appends), an older one, and one whose
// multi-stream appends do not read back as written (the adapter must notice and write markers one by one);
// each a cluster whose followers lag (the adapter must read from the leader).
for (const mode of ['atomic', 'unsupported', 'garbled'] as const) {
  eventLogContract(`kurrentdb (in-memory client, multiStreamAppend ${mode})`, async () => {
    const server = createFakeKurrentDbServer({ multiStreamAppend: mode });
    // Every read the adapter lets a follower answer misses the three newest records.
    server.followerLag = 3;
    const log = createKurrentDbEventLog(URL, { client: server.client() });
    const connections: EventLog[] = [];
    return {
      log,
      async connect() {
        const connection = createKurrentDbEventLog(URL, { client: server.client() });
        connections.push(connection);
        return connection;
      },
      async dispose() {
        for (const connection of connections) await connection.close();
        await log.close();
      },
    };
  });
}

type Counted = { projectId: string; n: number };

/** A read model counting the events of each project whose type starts with `prefix`. */
function counter(collection: string, prefix: string): Projector<Counted, null> {
  return {
    collection,
    typePrefixes: [prefix],
    keyOf: (event) => (event.data as { projectId?: string }).projectId ?? null,
    fold(current, event) {
      const projectId = (event.data as { projectId: string }).projectId;
      return {
        doc: { projectId, n: (current?.doc.n ?? 0) + 1 },
        state: null,
        sortKey: projectId,
        facet: 'visible',
        keys: {},
      };
    },
  };
}

const event = (type: string, projectId: string): NewEvent => ({
  id: randomUUID(),
  type,
  data: { projectId },
  metadata: { source: 'test', messageId: randomUUID() },
});

describe('KurrentDB adapter round trips (in-memory client)', () => {
  it('one read of the log per page is shared by every projector, and nothing is read per event', async () => {
    const server = createFakeKurrentDbServer();
    const log = createKurrentDbEventLog(URL, { client: server.client() });
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-kurrent-runner-'));
    const store = createSqliteReadStore(join(dir, 'read.sqlite'));
    try {
      const types = ['project.sighted', 'vote.cast', 'dossier.written'];
      const groups = Array.from({ length: 2500 }, (_, i) => ({
        stream: `project-p${i % 40}`,
        events: [event(types[i % 3]!, `p${i % 40}`)],
      }));
      for (let i = 0; i < groups.length; i += 500) await log.appendBatch(groups.slice(i, i + 500));
      const projectors = [
        counter('sightings', 'project.'),
        counter('votes', 'vote.'),
        counter('dossiers', 'dossier.'),
      ].map((p) => anyProjector(p));
      server.resetCounts();
      const runner = createProjectionRunner(log, store, projectors, { batchSize: 1000 });
      assert.equal(await runner.catchUp(), 2500);
      // Pages of 1000 positions: three forward reads of $all for 2500 events and three read models; the
      // three batches are one step (each folds from the one before), and a second step finds the head reached.
      assert.deepEqual(
        Object.fromEntries(server.calls),
        { readAll: 3, 'readAll backwards': 2 },
        'one $all read per page and one head read per step; no stream read',
      );
      assert.equal(
        (await store.get<Counted>('votes', 'p7'))?.doc.n,
        [...Array(2500).keys()].filter((i) => i % 40 === 7 && i % 3 === 1).length,
      );
      const [first] = await log.readAll({ afterPosition: 0, limit: 1 });
      assert.deepEqual(first!.metadata.source, 'test');
    } finally {
      await store.close();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('appendBatch: per stream one revision read, one marker write call, one append and one position read; per new event one marker read; at any stream length', async () => {
    const server = createFakeKurrentDbServer();
    const log = createKurrentDbEventLog(URL, { client: server.client() });
    try {
      const batch = (streams: number, perStream: number) =>
        Array.from({ length: streams * perStream }, (_, i) => ({
          stream: `calls-${i % streams}`,
          events: [event('vote.cast', `p${i}`)],
        }));
      // Each bucket this process writes a marker to for the first time has its metadata read once.
      const known = new Set<string>();
      const cost = async (groups: { stream: string; events: NewEvent[] }[]) => {
        const fresh = new Set(groups.map((g) => markerStream(g.events[0]!.id)).filter((bucket) => !known.has(bucket)));
        server.resetCounts();
        await log.appendBatch(groups);
        const { getStreamMetadata = 0, ...calls } = Object.fromEntries(server.calls);
        assert.equal(getStreamMetadata, fresh.size, 'one lifetime read per bucket new to this process');
        for (const bucket of fresh) known.add(bucket);
        return calls;
      };
      // The first multi-stream append of the log is read back once per stream in flight, to check it.
      assert.deepEqual(await cost(batch(2, 2).map((g) => ({ ...g, stream: `warm-${g.stream}` }))), {
        readStream: 2 + 2 + 2,
        multiStreamAppend: 2,
        appendToStream: 2,
      });
      // New streams: no marker can exist, so none is read.
      assert.deepEqual(await cost(batch(10, 30)), { readStream: 10 + 10, multiStreamAppend: 10, appendToStream: 10 });
      // Existing streams, 300 new events: 10 revision reads, 300 marker reads, 10 marker writes, 10 appends, 10 position reads.
      const next = batch(10, 30);
      assert.deepEqual(await cost(next), { readStream: 10 + 300 + 10, multiStreamAppend: 10, appendToStream: 10 });
      // The same batch again (a redelivery): per event its marker and the one revision it names, nothing written.
      assert.deepEqual(await cost(next), { readStream: 10 + 300 + 300 });
      // Streams 40 times longer cost the same.
      for (let i = 0; i < 40; i += 1) await cost(batch(10, 30));
      assert.deepEqual(await cost(batch(10, 30)), {
        readStream: 10 + 300 + 10,
        multiStreamAppend: 10,
        appendToStream: 10,
      });
    } finally {
      await log.close();
    }
  });

  it('appendBatch on a server without multi-stream appends, or whose multi-stream appends do not read back: one marker write per event, ids still idempotent', async () => {
    for (const mode of ['unsupported', 'garbled'] as const) {
      const server = createFakeKurrentDbServer({ multiStreamAppend: mode });
      const log = createKurrentDbEventLog(URL, { client: server.client() });
      try {
        const groups = Array.from({ length: 60 }, (_, i) => ({
          stream: `calls-${i % 3}`,
          events: [event('vote.cast', `p${i}`)],
        }));
        await log.appendBatch(groups);
        server.resetCounts();
        const more = Array.from({ length: 60 }, (_, i) => ({
          stream: `calls-${i % 3}`,
          events: [event('vote.cast', `q${i}`)],
        }));
        await log.appendBatch(more);
        // Each marker bucket this process had not written to yet gets its lifetime first ($maxAge).
        const seen = new Set(groups.map((g) => markerStream(g.events[0]!.id)));
        const buckets = new Set(more.map((g) => markerStream(g.events[0]!.id)).filter((bucket) => !seen.has(bucket)))
          .size;
        assert.deepEqual(
          Object.fromEntries(server.calls),
          { readStream: 3 + 60 + 3, getStreamMetadata: buckets, appendToStream: buckets + 60 + 3 },
          `${mode}: tried once, then one by one`,
        );
        const again = await log.appendBatch([...groups, ...more]);
        assert.ok(
          again.flat().every((e) => e.duplicate),
          `${mode}: every id is recognised`,
        );
        const stored = server.records.filter((r) => r.streamId.startsWith('calls-'));
        assert.equal(stored.length, 120, `${mode}: nothing stored twice`);
      } finally {
        await log.close();
      }
    }
  });

  it('two markers of one new bucket written at once give it its lifetime once', async () => {
    // Two event ids whose markers share a bucket (a birthday search over 2^18 buckets).
    const byBucket = new Map<string, NewEvent>();
    let pair: [NewEvent, NewEvent] | null = null;
    while (pair === null) {
      const e = event('vote.cast', 'p');
      const other = byBucket.get(markerStream(e.id));
      if (other) pair = [other, e];
      else byBucket.set(markerStream(e.id), e);
    }
    const server = createFakeKurrentDbServer({ multiStreamAppend: 'unsupported' });
    const log = createKurrentDbEventLog(URL, { client: server.client() });
    try {
      await log.appendBatch(pair.map((e, i) => ({ stream: `calls-${i}`, events: [e] })));
      const bucket = markerStream(pair[0].id);
      const lifetimes = server.records.filter((r) => r.streamId === `$$${bucket}`);
      assert.equal(lifetimes.length, 1, 'one $maxAge write for the shared bucket');
      assert.equal(server.records.filter((r) => r.streamId === bucket).length, 2, 'both markers');
    } finally {
      await log.close();
    }
  });
});
