/**
 * The KurrentDB adapter's idempotency protocol (eventstore/kurrentdb/idempotent-append.ts), run against
 * an in-memory server with KurrentDB's append semantics: expected revisions are compare-and-set, ids
 * are NOT checked when the expectation is the current revision (the case the protocol exists for), and
 * every call yields so concurrent appends interleave. No Docker needed; the contract suite runs the
 * real adapter where a server answers.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'vitest';
import type { AppendResult, NewEvent, ReadAllOptions, RecordedEvent } from '../../eventstore/port.ts';
import {
  appendIdempotent,
  backfillIdMarkers,
  type IdMarker,
  type IdempotencyServer,
  type StoredRef,
} from '../../eventstore/kurrentdb/idempotent-append.ts';
import { prng } from '../support/seed.ts';

type Call = keyof IdempotencyServer;

function fakeServer(seed = 1) {
  const streams = new Map<string, StoredRef[]>();
  const markers = new Map<string, IdMarker[]>();
  const calls: { call: Call; size: number }[] = [];
  const random = prng(seed);
  let position = 1000;
  /** Hooks a test sets to make one call fail (a crash, a lost response). */
  const faults: Partial<Record<Call | 'afterAppend', () => void>> = {};
  const step = async (call: Call, size = 1) => {
    calls.push({ call, size });
    // Let other appends run in between, in a seeded order.
    for (let i = Math.floor(random() * 3); i > 0; i -= 1) await new Promise((resolve) => setImmediate(resolve));
  };
  const server: IdempotencyServer = {
    async lastRevision(stream) {
      await step('lastRevision');
      const events = streams.get(stream);
      return events ? events.length - 1 : null;
    },
    async readMarkers(eventId) {
      await step('readMarkers');
      return [...(markers.get(eventId) ?? [])];
    },
    async readAt(stream, revision) {
      await step('readAt');
      return streams.get(stream)?.[revision] ?? null;
    },
    async readRange(stream, fromRevision, count) {
      await step('readRange', count);
      return (streams.get(stream) ?? []).slice(fromRevision, fromRevision + count);
    },
    async writeMarker(eventId, marker) {
      await step('writeMarker');
      markers.set(eventId, [...(markers.get(eventId) ?? []), marker]);
    },
    async writeMarkers(list) {
      await step('writeMarkers', list.length);
      for (const { eventId, marker } of list) markers.set(eventId, [...(markers.get(eventId) ?? []), marker]);
    },
    async appendExpecting(stream, events, expected) {
      await step('appendExpecting', events.length);
      faults.appendExpecting?.();
      const stored = streams.get(stream) ?? [];
      const current = streams.has(stream) ? stored.length - 1 : null;
      if (current !== expected) return 'conflict';
      for (const event of events) {
        position += 10 + Math.floor(random() * 50);
        stored.push({ id: event.id, position, revision: stored.length });
      }
      streams.set(stream, stored);
      faults.afterAppend?.();
      return 'ok';
    },
  };
  return { server, streams, markers, calls, faults };
}

const newEvent = (): NewEvent => ({ id: randomUUID(), type: 'test.event', data: {} });

function ok(result: AppendResult): Extract<AppendResult, { ok: true }> {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result as Extract<AppendResult, { ok: true }>;
}

describe('KurrentDB idempotent append (fake server)', () => {
  it('keeps the port semantics: new ids appended in order, stored ids reported, repeats inside a batch deduplicated', async () => {
    const { server, streams } = fakeServer();
    const [a, b, c] = [newEvent(), newEvent(), newEvent()];
    const first = ok(await appendIdempotent(server, 's', [a, b], 'no_stream'));
    assert.deepEqual(
      first.events.map((e) => [e.id, e.revision, e.duplicate]),
      [
        [a.id, 0, false],
        [b.id, 1, false],
      ],
    );
    const mixed = ok(await appendIdempotent(server, 's', [c, a, c], 1));
    assert.deepEqual(
      mixed.events.map((e) => [e.id, e.revision, e.duplicate]),
      [
        [c.id, 2, false],
        [a.id, 0, true],
        [c.id, 2, true],
      ],
    );
    assert.equal(mixed.events[1]!.position, first.events[0]!.position);
    for (const expected of ['no_stream', 'stream_exists', 'any', 0, 2, 9] as const) {
      const retry = ok(await appendIdempotent(server, 's', [a, b, c], expected));
      assert.ok(retry.events.every((e) => e.duplicate));
      assert.equal(retry.revision, 2);
    }
    assert.deepEqual(await appendIdempotent(server, 's', [newEvent()], 'no_stream'), {
      ok: false,
      reason: 'wrong_expected_revision',
      actualRevision: 2,
    });
    assert.deepEqual(await appendIdempotent(server, 'empty', [newEvent()], 'stream_exists'), {
      ok: false,
      reason: 'wrong_expected_revision',
      actualRevision: null,
    });
    assert.deepEqual(
      streams.get('s')!.map((e) => e.id),
      [a.id, b.id, c.id],
    );
  });

  it('costs the same round trips at any stream length, and still finds an id stored thousands of events ago', async () => {
    const { server, calls } = fakeServer();
    const oldest = newEvent();
    ok(await appendIdempotent(server, 'calls-collector', [oldest]));
    const costOfAppend = async () => {
      calls.length = 0;
      ok(await appendIdempotent(server, 'calls-collector', [newEvent()]));
      return calls.map((c) => `${c.call}:${c.size}`);
    };
    const early = await costOfAppend();
    for (let i = 0; i < 3000; i += 1) ok(await appendIdempotent(server, 'calls-collector', [newEvent()]));
    const late = await costOfAppend();
    assert.deepEqual(late, early, 'an append at revision 3000 makes the same calls as one at revision 1');
    assert.deepEqual(early, ['lastRevision:1', 'readMarkers:1', 'writeMarkers:1', 'appendExpecting:1', 'readRange:1']);
    calls.length = 0;
    ok(await appendIdempotent(server, 'calls-collector', Array.from({ length: 50 }, newEvent)));
    assert.deepEqual(
      calls.filter((c) => c.call !== 'readMarkers').map((c) => `${c.call}:${c.size}`),
      ['lastRevision:1', 'writeMarkers:50', 'appendExpecting:50', 'readRange:50'],
      'the markers of 50 new events are written in one call',
    );
    calls.length = 0;
    const retry = ok(await appendIdempotent(server, 'calls-collector', [oldest]));
    assert.deepEqual(
      retry.events.map((e) => [e.revision, e.duplicate]),
      [[0, true]],
    );
    assert.deepEqual(
      calls.map((c) => `${c.call}:${c.size}`),
      ['lastRevision:1', 'readMarkers:1', 'readAt:1'],
    );
  });

  it('a process that died between its marker and its append leaves the id appendable once', async () => {
    const { server, streams, faults } = fakeServer();
    const event = newEvent();
    ok(await appendIdempotent(server, 'p', [newEvent()]));
    faults.appendExpecting = () => {
      throw new Error('process killed');
    };
    await assert.rejects(appendIdempotent(server, 'p', [event]), /process killed/);
    delete faults.appendExpecting;
    // Another event takes the revision the dead attempt's marker names.
    ok(await appendIdempotent(server, 'p', [newEvent()]));
    const retry = ok(await appendIdempotent(server, 'p', [event]));
    assert.deepEqual(
      retry.events.map((e) => [e.revision, e.duplicate]),
      [[2, false]],
    );
    const again = ok(await appendIdempotent(server, 'p', [event]));
    assert.deepEqual(
      again.events.map((e) => [e.revision, e.duplicate]),
      [[2, true]],
    );
    assert.equal(streams.get('p')!.filter((e) => e.id === event.id).length, 1);
  });

  it('an append whose answer was lost is recognised when retried after the stream moved on', async () => {
    const { server, streams, faults } = fakeServer();
    const event = newEvent();
    faults.afterAppend = () => {
      throw new Error('connection reset after the write');
    };
    await assert.rejects(appendIdempotent(server, 'q', [event]), /connection reset/);
    delete faults.afterAppend;
    for (let i = 0; i < 5; i += 1) ok(await appendIdempotent(server, 'q', [newEvent()]));
    const retry = ok(await appendIdempotent(server, 'q', [event], 4));
    assert.deepEqual(
      retry.events.map((e) => [e.revision, e.duplicate]),
      [[0, true]],
    );
    assert.equal(streams.get('q')!.length, 6);
  });

  it('concurrent writers of the same ids, with other writers moving the stream, store each id exactly once', async () => {
    for (let seed = 1; seed <= 40; seed += 1) {
      const { server, streams } = fakeServer(seed);
      const shared = [newEvent(), newEvent()];
      const others = Array.from({ length: 6 }, () => newEvent());
      const results = await Promise.all([
        ...Array.from({ length: 6 }, () => appendIdempotent(server, 'hot', shared)),
        ...others.map((event) => appendIdempotent(server, 'hot', [event])),
      ]);
      const stored = streams.get('hot')!;
      assert.equal(stored.length, 8, `seed ${seed}: ${stored.map((e) => e.id).join(',')}`);
      assert.equal(new Set(stored.map((e) => e.id)).size, 8, `seed ${seed}: an id stored twice`);
      const sharedResults = results.slice(0, 6).map(ok);
      assert.equal(
        sharedResults.filter((r) => r.events.every((e) => !e.duplicate)).length,
        1,
        `seed ${seed}: one writer stored them`,
      );
      for (const result of sharedResults) {
        assert.deepEqual(
          result.events.map((e) => e.position),
          shared.map((event) => stored.find((e) => e.id === event.id)!.position),
          `seed ${seed}: every writer reports the stored positions`,
        );
      }
    }
  });
});

describe('KurrentDB id markers for a log written before them (fake server)', () => {
  it('backfills a marker for every stored event, once, after which old messages are recognised', async () => {
    const { server, streams, markers } = fakeServer();
    // Events stored the old way: in their streams, without markers.
    const old = Array.from({ length: 25 }, (_, i) => ({ stream: `s${i % 4}`, event: newEvent() }));
    let position = 10;
    for (const { stream, event } of old) {
      const list = streams.get(stream) ?? [];
      position += 7;
      list.push({ id: event.id, position, revision: list.length });
      streams.set(stream, list);
    }
    const log = {
      async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
        const all = [...streams.entries()]
          .flatMap(([stream, list]) =>
            list.map((ref) => ({
              ...ref,
              stream,
              type: 'old',
              data: {},
              metadata: {},
              recordedAt: '2026-01-01T00:00:00.000Z',
            })),
          )
          .sort((a, b) => a.position - b.position);
        return all.filter((e) => e.position > options.afterPosition).slice(0, options.limit);
      },
    };
    const before = await appendIdempotent(server, 's1', [old[1]!.event]);
    assert.equal(
      ok(before).events[0]!.duplicate,
      false,
      'without markers an old id is stored again: the reason for the backfill',
    );
    streams.get('s1')!.pop();
    markers.clear();

    const first = await backfillIdMarkers(server, log, { pageSize: 4 });
    assert.deepEqual(first, { scanned: 25, written: 25, position: 10 + 25 * 7 }, 'every event, up to the last one');
    const again = await backfillIdMarkers(server, log, { pageSize: 4 });
    assert.equal(again.written, 0, 'a second run writes nothing');
    for (const { stream, event } of old) {
      const retry = ok(await appendIdempotent(server, stream, [event]));
      assert.equal(retry.events[0]!.duplicate, true, `${stream} ${event.id}`);
    }
    assert.equal(
      [...streams.values()].reduce((n, list) => n + list.length, 0),
      25,
    );
  });
});
