/**
 * The EventLog contract (eventstore/port.ts): one suite, run unchanged against every adapter.
 *
 * Most tests share one log and isolate themselves with fresh stream names and event-type prefixes,
 * so they also prove that nothing depends on the log being empty. Tests about an empty log open
 * their own. Event ids are UUIDs, as the service uses (events/ids.ts) and KurrentDB requires.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import { skipFor } from '../support/skip.ts';
import type { AppendResult, EventLog, NewEvent, RecordedEvent } from '../../eventstore/port.ts';

export type EventLogHandle = {
  log: EventLog;
  /** A second, independent connection to the same log (another client / SQLite connection). */
  connect(): Promise<EventLog>;
  /** Closes every connection and removes what open() created. */
  dispose(): Promise<void>;
};

export type ContractOptions = {
  /** false to run; a reason to declare every test skipped (e.g. no Docker engine). */
  skip?: false | string;
  /**
   * The log stamps recordedAt from the appending process's clock (the embedded log, PostgreSQL), so a
   * test that sets the clock sets recordedAt on either; KurrentDB's server stamps its own.
   */
  processClock?: boolean;
};

const HOUR = 3_600_000;

function newEvent(type: string, data: unknown = { n: 1 }, metadata?: Record<string, unknown>): NewEvent {
  return metadata === undefined ? { id: randomUUID(), type, data } : { id: randomUUID(), type, data, metadata };
}

/** A type prefix no other test (or earlier run) uses. */
function freshTag(): string {
  return `t${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

function freshStream(): string {
  return `contract-${randomUUID()}`;
}

function expectOk(result: AppendResult): Extract<AppendResult, { ok: true }> {
  assert.equal(result.ok, true, `append failed: ${JSON.stringify(result)}`);
  return result as Extract<AppendResult, { ok: true }>;
}

async function readAllPages(
  log: EventLog,
  afterPosition: number,
  typePrefixes?: readonly string[],
): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  let cursor = afterPosition;
  for (;;) {
    const page = await log.readAll({ afterPosition: cursor, typePrefixes, limit: 250 });
    if (page.length === 0) return events;
    events.push(...page);
    cursor = page[page.length - 1]!.position;
  }
}

export function eventLogContract(
  adapterName: string,
  open: () => Promise<EventLogHandle>,
  options: ContractOptions = {},
): void {
  const skip = options.skip ?? false;

  describe(`EventLog contract: ${adapterName}`, () => {
    let handle: EventLogHandle | undefined;
    const extra: EventLog[] = [];
    const log = (): EventLog => {
      assert.ok(handle, 'log not opened');
      return handle.log;
    };
    const connect = async (): Promise<EventLog> => {
      assert.ok(handle, 'log not opened');
      const connection = await handle.connect();
      extra.push(connection);
      return connection;
    };

    beforeAll(async () => {
      if (!skip) handle = await open();
    });
    afterAll(async () => {
      for (const connection of extra) await connection.close();
      await handle?.dispose();
    });

    describe(`${adapterName}: appends`, () => {
      it(`${adapterName}: a new stream gets revisions from 0 and positions past the head`, skipFor(skip), async () => {
        const stream = freshStream();
        const headBefore = await log().headPosition();
        const [a, b] = [newEvent('contract.first'), newEvent('contract.second')];
        const result = expectOk(await log().append(stream, [a, b], 'no_stream'));
        assert.equal(result.revision, 1);
        assert.deepEqual(
          result.events.map((e) => ({ id: e.id, revision: e.revision, duplicate: e.duplicate })),
          [
            { id: a.id, revision: 0, duplicate: false },
            { id: b.id, revision: 1, duplicate: false },
          ],
        );
        const [pa, pb] = result.events.map((e) => e.position) as [number, number];
        assert.ok(pa > headBefore, `first position ${pa} must be past the previous head ${headBefore}`);
        assert.ok(pb > pa, 'positions increase within one append');
        assert.equal(await log().headPosition(), pb);
        const stored = await log().readStream(stream);
        assert.deepEqual(
          stored.map((e) => [e.id, e.revision, e.position]),
          [
            [a.id, 0, pa],
            [b.id, 1, pb],
          ],
        );
      });

      it(
        `${adapterName}: appending a stored id again is a no-op reporting the stored position`,
        skipFor(skip),
        async () => {
          const stream = freshStream();
          const event = newEvent('contract.once');
          const first = expectOk(await log().append(stream, [event]));
          const head = await log().headPosition();
          const again = expectOk(await log().append(stream, [{ ...event, data: { changed: true } }]));
          assert.deepEqual(again.events, [
            { id: event.id, position: first.events[0]!.position, revision: 0, duplicate: true },
          ]);
          assert.equal(again.revision, 0);
          assert.equal(await log().headPosition(), head, 'a duplicate appends nothing');
          const stored = await log().readStream(stream);
          assert.equal(stored.length, 1);
          assert.deepEqual(stored[0]!.data, { n: 1 }, 'the stored event is kept, not replaced');
        },
      );

      it(
        `${adapterName}: a retried append of stored ids succeeds whatever revision it expected`,
        skipFor(skip),
        async () => {
          const stream = freshStream();
          const events = [newEvent('contract.retry'), newEvent('contract.retry')];
          const first = expectOk(await log().append(stream, events, 'no_stream'));
          for (const expected of ['no_stream', 'stream_exists', 'any', 0, 1, 7] as const) {
            const retry = expectOk(await log().append(stream, events, expected));
            assert.deepEqual(
              retry.events,
              first.events.map((e) => ({ ...e, duplicate: true })),
              `retry expecting ${String(expected)}`,
            );
            assert.equal(retry.revision, 1);
          }
          assert.equal((await log().readStream(stream)).length, 2);
        },
      );

      it(
        `${adapterName}: a mixed batch appends only the new ids and reports both in input order`,
        skipFor(skip),
        async () => {
          const stream = freshStream();
          const stored = newEvent('contract.mixed');
          const first = expectOk(await log().append(stream, [stored], 'no_stream'));
          const fresh = newEvent('contract.mixed');
          const fresh2 = newEvent('contract.mixed');
          const mixed = expectOk(await log().append(stream, [fresh, stored, fresh2], 0));
          assert.equal(mixed.revision, 2);
          assert.deepEqual(
            mixed.events.map((e) => ({ id: e.id, revision: e.revision, duplicate: e.duplicate })),
            [
              { id: fresh.id, revision: 1, duplicate: false },
              { id: stored.id, revision: 0, duplicate: true },
              { id: fresh2.id, revision: 2, duplicate: false },
            ],
          );
          assert.equal(mixed.events[1]!.position, first.events[0]!.position);
          assert.ok(mixed.events[0]!.position > first.events[0]!.position);
          assert.deepEqual(
            (await log().readStream(stream)).map((e) => e.id),
            [stored.id, fresh.id, fresh2.id],
          );
        },
      );

      it(`${adapterName}: an id repeated inside one batch is stored once`, skipFor(skip), async () => {
        const stream = freshStream();
        const event = newEvent('contract.repeat', { copy: 1 });
        const result = expectOk(await log().append(stream, [event, { ...event, data: { copy: 2 } }], 'no_stream'));
        assert.equal(result.revision, 0);
        assert.equal(result.events.length, 2);
        assert.deepEqual(result.events[0], {
          id: event.id,
          position: result.events[0]!.position,
          revision: 0,
          duplicate: false,
        });
        assert.deepEqual(result.events[1], { ...result.events[0], duplicate: true });
        const stored = await log().readStream(stream);
        assert.deepEqual(
          stored.map((e) => e.data),
          [{ copy: 1 }],
        );
      });

      it(`${adapterName}: an empty append changes nothing and reports the stream revision`, skipFor(skip), async () => {
        const stream = freshStream();
        assert.deepEqual(await log().append(stream, []), { ok: true, events: [], revision: -1 });
        expectOk(await log().append(stream, [newEvent('contract.empty')]));
        assert.deepEqual(await log().append(stream, [], 'no_stream'), { ok: true, events: [], revision: 0 });
        assert.equal(await log().streamRevision(stream), 0);
      });
    });

    describe(`${adapterName}: batch appends`, () => {
      it(
        `${adapterName}: appendBatch appends groups across streams with per-stream revisions, results in group order`,
        skipFor(skip),
        async () => {
          const [s1, s2] = [freshStream(), freshStream()];
          const existing = newEvent('contract.batch');
          expectOk(await log().append(s2, [existing], 'no_stream'));
          const headBefore = await log().headPosition();
          const groups = [
            { stream: s1, events: [newEvent('contract.batch'), newEvent('contract.batch')] },
            { stream: s2, events: [newEvent('contract.batch')] },
            { stream: s1, events: [newEvent('contract.batch')] },
            { stream: s2, events: [] },
          ];
          const results = await log().appendBatch(groups);
          assert.deepEqual(
            results.map((group) => group.map((e) => ({ id: e.id, revision: e.revision, duplicate: e.duplicate }))),
            [
              [
                { id: groups[0]!.events[0]!.id, revision: 0, duplicate: false },
                { id: groups[0]!.events[1]!.id, revision: 1, duplicate: false },
              ],
              [{ id: groups[1]!.events[0]!.id, revision: 1, duplicate: false }],
              [{ id: groups[2]!.events[0]!.id, revision: 2, duplicate: false }],
              [],
            ],
          );
          const positions = results.flat().map((e) => e.position);
          assert.ok(
            positions.every((p) => p > headBefore),
            'every event lands past the previous head',
          );
          assert.equal(new Set(positions).size, positions.length, 'one position per event');
          // Within a stream, input order is revision order is position order.
          const s1Stored = await log().readStream(s1);
          assert.deepEqual(
            s1Stored.map((e) => [e.id, e.revision, e.position]),
            [...results[0]!, ...results[2]!].map((e) => [e.id, e.revision, e.position]),
          );
          assert.ok(s1Stored[0]!.position < s1Stored[1]!.position && s1Stored[1]!.position < s1Stored[2]!.position);
          assert.deepEqual(
            (await log().readStream(s2)).map((e) => e.id),
            [existing.id, groups[1]!.events[0]!.id],
          );
          assert.equal(await log().streamRevision(s1), 2);
        },
      );

      it(
        `${adapterName}: appendBatch reports stored ids and ids repeated in the batch as duplicates of the first`,
        skipFor(skip),
        async () => {
          const stream = freshStream();
          const stored = newEvent('contract.batchdup', { v: 'stored' });
          const first = expectOk(await log().append(stream, [stored]));
          const fresh = newEvent('contract.batchdup', { v: 'fresh' });
          const head = await log().headPosition();
          const results = await log().appendBatch([
            { stream, events: [{ ...stored, data: { v: 'changed' } }] },
            { stream, events: [fresh] },
            { stream, events: [{ ...fresh, data: { v: 'again' } }, stored] },
          ]);
          const freshStored = results[1]![0]!;
          assert.deepEqual(results, [
            [{ ...first.events[0]!, duplicate: true }],
            [{ id: fresh.id, position: freshStored.position, revision: 1, duplicate: false }],
            [
              { ...freshStored, duplicate: true },
              { ...first.events[0]!, duplicate: true },
            ],
          ]);
          assert.ok(freshStored.position > head);
          assert.deepEqual(
            (await log().readStream(stream)).map((e) => e.data),
            [{ v: 'stored' }, { v: 'fresh' }],
          );
          // A retried batch appends nothing.
          const headAfter = await log().headPosition();
          const retry = await log().appendBatch([{ stream, events: [fresh] }]);
          assert.deepEqual(retry, [[{ ...freshStored, duplicate: true }]]);
          assert.equal(await log().headPosition(), headAfter);
        },
      );

      it(
        `${adapterName}: appendBatch of nothing changes nothing; readAll sees a batch like single appends`,
        skipFor(skip),
        async () => {
          const head = await log().headPosition();
          assert.deepEqual(await log().appendBatch([]), []);
          assert.equal(await log().headPosition(), head);
          const tag = freshTag();
          const stream = freshStream();
          const events = [
            newEvent(`${tag}.a`, { k: [1, 'x', null] }, { source: 'batch' }),
            newEvent(`${tag}.b`, 'text'),
          ];
          await log().appendBatch([{ stream, events }]);
          const read = await readAllPages(log(), head, [tag]);
          assert.deepEqual(
            read.map((e) => ({ id: e.id, type: e.type, data: e.data, metadata: e.metadata, stream: e.stream })),
            [
              {
                id: events[0]!.id,
                type: `${tag}.a`,
                data: { k: [1, 'x', null] },
                metadata: { source: 'batch' },
                stream,
              },
              { id: events[1]!.id, type: `${tag}.b`, data: 'text', metadata: {}, stream },
            ],
          );
        },
      );
    });

    describe(`${adapterName}: optimistic concurrency`, () => {
      it(`${adapterName}: no_stream succeeds only while the stream does not exist`, skipFor(skip), async () => {
        const stream = freshStream();
        expectOk(await log().append(stream, [newEvent('contract.occ')], 'no_stream'));
        const rejected = newEvent('contract.occ');
        assert.deepEqual(await log().append(stream, [rejected], 'no_stream'), {
          ok: false,
          reason: 'wrong_expected_revision',
          actualRevision: 0,
        });
        assert.equal((await log().readStream(stream)).length, 1, 'a refused append writes nothing');
      });

      it(`${adapterName}: stream_exists succeeds only once the stream exists`, skipFor(skip), async () => {
        const stream = freshStream();
        assert.deepEqual(await log().append(stream, [newEvent('contract.occ')], 'stream_exists'), {
          ok: false,
          reason: 'wrong_expected_revision',
          actualRevision: null,
        });
        assert.equal(await log().streamRevision(stream), null, 'a refused append does not create the stream');
        expectOk(await log().append(stream, [newEvent('contract.occ')], 'any'));
        const result = expectOk(await log().append(stream, [newEvent('contract.occ')], 'stream_exists'));
        assert.equal(result.revision, 1);
      });

      it(`${adapterName}: an exact revision must equal the stream's last revision`, skipFor(skip), async () => {
        const stream = freshStream();
        assert.deepEqual(await log().append(stream, [newEvent('contract.occ')], 0), {
          ok: false,
          reason: 'wrong_expected_revision',
          actualRevision: null,
        });
        expectOk(await log().append(stream, [newEvent('contract.occ'), newEvent('contract.occ')], 'no_stream'));
        for (const wrong of [0, 2, 5]) {
          assert.deepEqual(await log().append(stream, [newEvent('contract.occ')], wrong), {
            ok: false,
            reason: 'wrong_expected_revision',
            actualRevision: 1,
          });
        }
        const ok = expectOk(await log().append(stream, [newEvent('contract.occ')], 1));
        assert.equal(ok.revision, 2);
        assert.deepEqual(
          (await log().readStream(stream)).map((e) => e.revision),
          [0, 1, 2],
        );
      });

      it(`${adapterName}: a refused mixed batch appends none of its new ids`, skipFor(skip), async () => {
        const stream = freshStream();
        const stored = newEvent('contract.occ');
        expectOk(await log().append(stream, [stored], 'no_stream'));
        const fresh = newEvent('contract.occ');
        assert.deepEqual(await log().append(stream, [stored, fresh], 'no_stream'), {
          ok: false,
          reason: 'wrong_expected_revision',
          actualRevision: 0,
        });
        assert.deepEqual(
          (await log().readStream(stream)).map((e) => e.id),
          [stored.id],
        );
      });

      it(
        `${adapterName}: appends racing for the same expected revision: exactly one wins (one connection)`,
        skipFor(skip),
        async () => {
          for (let round = 0; round < 3; round += 1) {
            const stream = freshStream();
            expectOk(await log().append(stream, [newEvent('contract.race')], 'no_stream'));
            const contenders = Array.from({ length: 6 }, () => newEvent('contract.race'));
            const results = await Promise.all(contenders.map((event) => log().append(stream, [event], 0)));
            assertOneWinner(results, 1);
            const winner = contenders[results.findIndex((r) => r.ok)]!;
            assert.deepEqual(
              (await log().readStream(stream)).map((e) => e.revision),
              [0, 1],
            );
            assert.equal((await log().readStream(stream))[1]!.id, winner.id);
          }
        },
      );

      it(`${adapterName}: appends racing over separate connections: exactly one wins`, skipFor(skip), async () => {
        const connections = [log(), await connect(), await connect()];
        for (let round = 0; round < 3; round += 1) {
          const stream = freshStream();
          // Creation races too: no_stream is what a quota stream's first taker expects.
          const creators = await Promise.all(
            connections.map((c) => c.append(stream, [newEvent('contract.race')], 'no_stream')),
          );
          assertOneWinner(creators, 0);
          const takers = await Promise.all(connections.map((c) => c.append(stream, [newEvent('contract.race')], 0)));
          assertOneWinner(takers, 1);
          assert.equal(await log().streamRevision(stream), 1);
        }
      });

      it(
        `${adapterName}: appends expecting any, racing on one stream, all land without gaps`,
        skipFor(skip),
        async () => {
          const stream = freshStream();
          const connections = [log(), await connect()];
          const events = Array.from({ length: 8 }, () => newEvent('contract.any'));
          const results = await Promise.all(
            events.map((event, i) => connections[i % 2]!.append(stream, [event], 'any')),
          );
          for (const result of results) expectOk(result);
          const stored = await log().readStream(stream);
          assert.deepEqual(
            stored.map((e) => e.revision),
            [0, 1, 2, 3, 4, 5, 6, 7],
          );
          assert.deepEqual(new Set(stored.map((e) => e.id)), new Set(events.map((e) => e.id)));
        },
      );
    });

    describe(`${adapterName}: reading streams`, () => {
      it(
        `${adapterName}: readStream returns the stream in revision order with every field`,
        skipFor(skip),
        async () => {
          const stream = freshStream();
          const events = [newEvent('contract.read.a', { i: 0 }), newEvent('contract.read.b', { i: 1 }, { by: 'test' })];
          const appended = expectOk(await log().append(stream, events));
          expectOk(await log().append(stream, [newEvent('contract.read.c', { i: 2 })]));
          const stored = await log().readStream(stream);
          assert.deepEqual(
            stored.map((e) => e.revision),
            [0, 1, 2],
          );
          const second = stored[1]!;
          assert.deepEqual(
            { ...second, recordedAt: undefined },
            {
              id: events[1]!.id,
              stream,
              revision: 1,
              position: appended.events[1]!.position,
              type: 'contract.read.b',
              data: { i: 1 },
              metadata: { by: 'test' },
              recordedAt: undefined,
            },
          );
          assert.deepEqual(stored[0]!.metadata, {}, 'metadata defaults to an empty object');
          for (const event of stored)
            assert.equal(new Date(event.recordedAt).toISOString(), event.recordedAt, 'recordedAt is ISO 8601');
        },
      );

      it(`${adapterName}: readStream of a missing stream is empty; streamRevision is null`, skipFor(skip), async () => {
        const stream = freshStream();
        assert.deepEqual(await log().readStream(stream), []);
        assert.equal(await log().streamRevision(stream), null);
        expectOk(await log().append(stream, [newEvent('contract.rev'), newEvent('contract.rev')]));
        assert.equal(await log().streamRevision(stream), 1);
        expectOk(await log().append(stream, [newEvent('contract.rev')]));
        assert.equal(await log().streamRevision(stream), 2);
      });

      it(
        `${adapterName}: readStream with toPosition stops at that global position (inclusive)`,
        skipFor(skip),
        async () => {
          const mine = freshStream();
          const other = freshStream();
          const p0 = expectOk(await log().append(mine, [newEvent('contract.asof')])).events[0]!.position;
          expectOk(await log().append(other, [newEvent('contract.asof')]));
          const p1 = expectOk(await log().append(mine, [newEvent('contract.asof')])).events[0]!.position;
          const otherLater = expectOk(await log().append(other, [newEvent('contract.asof')])).events[0]!.position;
          expectOk(await log().append(mine, [newEvent('contract.asof')]));
          assert.deepEqual(
            (await log().readStream(mine, { toPosition: p1 })).map((e) => e.revision),
            [0, 1],
          );
          assert.deepEqual(
            (await log().readStream(mine, { toPosition: otherLater })).map((e) => e.revision),
            [0, 1],
          );
          assert.deepEqual(
            (await log().readStream(mine, { toPosition: p0 })).map((e) => e.revision),
            [0],
          );
          assert.deepEqual(await log().readStream(mine, { toPosition: p0 - 1 }), []);
          assert.equal((await log().readStream(mine)).length, 3);
        },
      );
    });

    describe(`${adapterName}: reading the whole log`, () => {
      it(
        `${adapterName}: readAll starts after the given position (exclusive) in position order`,
        skipFor(skip),
        async () => {
          const tag = freshTag();
          const base = await log().headPosition();
          const streams = [freshStream(), freshStream()];
          const appended: number[] = [];
          for (let i = 0; i < 5; i += 1) {
            const result = expectOk(await log().append(streams[i % 2]!, [newEvent(`${tag}.e`, { i })]));
            appended.push(result.events[0]!.position);
          }
          const all = await log().readAll({ afterPosition: base, typePrefixes: [tag], limit: 100 });
          assert.deepEqual(
            all.map((e) => e.position),
            appended,
          );
          assert.deepEqual(
            all.map((e) => (e.data as { i: number }).i),
            [0, 1, 2, 3, 4],
          );
          const afterSecond = await log().readAll({ afterPosition: appended[1]!, typePrefixes: [tag], limit: 100 });
          assert.deepEqual(
            afterSecond.map((e) => e.position),
            appended.slice(2),
          );
          assert.deepEqual(await log().readAll({ afterPosition: appended[4]!, typePrefixes: [tag], limit: 100 }), []);
        },
      );

      it(`${adapterName}: readAll filters by type prefix`, skipFor(skip), async () => {
        const tag = freshTag();
        const base = await log().headPosition();
        const stream = freshStream();
        const types = [`${tag}.a.one`, `${tag}.b.one`, `${tag}.c.one`, `${tag}.a.two`, `${tag}.ab`, `${tag}.c.two`];
        expectOk(
          await log().append(
            stream,
            types.map((type) => newEvent(type)),
          ),
        );
        const picked = await log().readAll({
          afterPosition: base,
          typePrefixes: [`${tag}.a.`, `${tag}.c.`],
          limit: 100,
        });
        assert.deepEqual(
          picked.map((e) => e.type),
          [`${tag}.a.one`, `${tag}.c.one`, `${tag}.a.two`, `${tag}.c.two`],
        );
        const byPrefix = await log().readAll({ afterPosition: base, typePrefixes: [`${tag}.a`], limit: 100 });
        assert.deepEqual(
          byPrefix.map((e) => e.type),
          [`${tag}.a.one`, `${tag}.a.two`, `${tag}.ab`],
        );
        assert.deepEqual(await log().readAll({ afterPosition: base, typePrefixes: [`${tag}.none`], limit: 100 }), []);
        const unfiltered = await log().readAll({ afterPosition: base, limit: 100 });
        assert.deepEqual(
          unfiltered.map((e) => e.type),
          types,
          'no prefixes: every event (and no system events)',
        );
      });

      it(
        `${adapterName}: readAll honours limit and toPosition, and pages resume without gaps`,
        skipFor(skip),
        async () => {
          const tag = freshTag();
          const base = await log().headPosition();
          const stream = freshStream();
          const other = freshStream();
          const positions: number[] = [];
          for (let i = 0; i < 7; i += 1) {
            positions.push(expectOk(await log().append(stream, [newEvent(`${tag}.x`, { i })])).events[0]!.position);
            expectOk(await log().append(other, [newEvent(`${freshTag()}.noise`)]));
          }
          const first = await log().readAll({ afterPosition: base, typePrefixes: [tag], limit: 3 });
          assert.deepEqual(
            first.map((e) => e.position),
            positions.slice(0, 3),
          );
          const second = await log().readAll({ afterPosition: first[2]!.position, typePrefixes: [tag], limit: 3 });
          assert.deepEqual(
            second.map((e) => e.position),
            positions.slice(3, 6),
          );
          const bounded = await log().readAll({
            afterPosition: base,
            typePrefixes: [tag],
            limit: 100,
            toPosition: positions[3]!,
          });
          assert.deepEqual(
            bounded.map((e) => e.position),
            positions.slice(0, 4),
          );
          const boundedBetween = await log().readAll({
            afterPosition: positions[1]!,
            typePrefixes: [tag],
            limit: 100,
            toPosition: positions[4]! + 1,
          });
          assert.deepEqual(
            boundedBetween.map((e) => e.position),
            positions.slice(2, 5),
          );
          const unfiltered = await log().readAll({ afterPosition: base, limit: 4 });
          assert.equal(unfiltered.length, 4);
          assert.equal(unfiltered[0]!.position, positions[0]);
        },
      );

      it(`${adapterName}: readAll returns the same records as readStream`, skipFor(skip), async () => {
        const tag = freshTag();
        const base = await log().headPosition();
        const stream = freshStream();
        expectOk(
          await log().append(stream, [newEvent(`${tag}.same`, { a: [1, 2] }, { m: 'x' }), newEvent(`${tag}.same`)]),
        );
        assert.deepEqual(
          await log().readAll({ afterPosition: base, typePrefixes: [tag], limit: 10 }),
          await log().readStream(stream),
        );
      });

      it(
        `${adapterName}: positions strictly increase and recordedAt never decreases across the log`,
        skipFor(skip),
        async () => {
          const streams = [freshStream(), freshStream(), freshStream()];
          for (let i = 0; i < 9; i += 1)
            expectOk(await log().append(streams[i % 3]!, [newEvent('contract.order'), newEvent('contract.order')]));
          const all = await readAllPages(log(), 0);
          assert.ok(all.length >= 18);
          for (let i = 1; i < all.length; i += 1) {
            const [previous, current] = [all[i - 1]!, all[i]!];
            assert.ok(current.position > previous.position, `position ${current.position} after ${previous.position}`);
            assert.ok(
              current.recordedAt >= previous.recordedAt,
              `recordedAt ${current.recordedAt} after ${previous.recordedAt}`,
            );
          }
          assert.equal(new Set(all.map((e) => e.id)).size, all.length, 'every id once');
          assert.equal(
            new Set(all.map((e) => `${e.stream}\u0000${e.revision}`)).size,
            all.length,
            'every (stream, revision) once',
          );
          assert.equal(all[all.length - 1]!.position, await log().headPosition());
        },
      );

      it(`${adapterName}: another connection reads what this one appended`, skipFor(skip), async () => {
        const other = await connect();
        const tag = freshTag();
        const base = await other.headPosition();
        const stream = freshStream();
        const appended = expectOk(await log().append(stream, [newEvent(`${tag}.seen`)]));
        assert.equal(await other.headPosition(), appended.events[0]!.position);
        assert.deepEqual(
          await other.readAll({ afterPosition: base, typePrefixes: [tag], limit: 10 }),
          await log().readStream(stream),
        );
        assert.equal(await other.streamRevision(stream), 0);
      });
    });

    describe(`${adapterName}: a page never ends short of the head it was read up to`, () => {
      // The runner and settle move a checkpoint to the head after a short page: the page must then hold
      // every event up to it, on whichever node answers (a clustered log reads from its leader).
      it(
        `${adapterName}: right after an append, headPosition and readAll up to it hold it, from this connection and another`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          const other = await connect();
          const tag = `head${randomUUID().slice(0, 8)}`;
          const positions: number[] = [];
          for (let i = 0; i < 4; i += 1)
            positions.push(expectOk(await log().append(freshStream(), [newEvent(`${tag}.seen`)])).events[0]!.position);
          const last = positions.at(-1)!;
          for (const reader of [log(), other]) {
            assert.ok((await reader.headPosition()) >= last, 'the head is at least the last append');
            const page = await reader.readAll({ afterPosition: positions[0]! - 1, toPosition: last, limit: 100 });
            assert.equal(page.at(-1)?.position, last, 'the page ends with the last append');
          }
        },
      );
    });

    describe(`${adapterName}: waiting for appends`, () => {
      it(
        `${adapterName}: waitForAppend resolves at once when a later event already exists`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          expectOk(await log().append(freshStream(), [newEvent('contract.wait')]));
          const head = await log().headPosition();
          // An hour-long timeout: only the existing event can end these waits before the test's own timeout.
          await log().waitForAppend(head - 1, HOUR);
          await (await connect()).waitForAppend(head - 1, HOUR);
        },
      );

      it(
        `${adapterName}: waitForAppend resolves when an event is appended while it waits`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          const head = await log().headPosition();
          let resolved = false;
          const waiting = log()
            .waitForAppend(head, HOUR)
            .then(() => {
              resolved = true;
            });
          await new Promise((resolve) => setImmediate(resolve));
          assert.equal(resolved, false, 'nothing was appended yet');
          const appended = expectOk(await log().append(freshStream(), [newEvent('contract.wait')]));
          await waiting;
          assert.ok(appended.events[0]!.position > head);
        },
      );

      it(
        `${adapterName}: waitForAppend is woken by an append through another connection`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          // The subscription rule: a waiter in one process learns of appends made by any other writer,
          // not only by its own connection (an hour-long timeout: only the other append can end it).
          const other = await connect();
          const head = await log().headPosition();
          let resolved = false;
          const waiting = log()
            .waitForAppend(head, HOUR)
            .then(() => {
              resolved = true;
            });
          await new Promise((resolve) => setImmediate(resolve));
          assert.equal(resolved, false, 'nothing was appended yet');
          const appended = expectOk(await other.append(freshStream(), [newEvent('contract.wait.other')]));
          await waiting;
          assert.ok(appended.events[0]!.position > head);
          // Waiters that start later, on either connection, see it at once.
          await log().waitForAppend(head, HOUR);
          await other.waitForAppend(head, HOUR);
        },
      );

      it(
        `${adapterName}: several waiters on one connection all wake on one append from another`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          const other = await connect();
          const head = await log().headPosition();
          const waits = Array.from({ length: 5 }, () => log().waitForAppend(head, HOUR));
          const stillWaiting = log().waitForAppend(head + Number.MAX_SAFE_INTEGER / 2, 50);
          expectOk(await other.append(freshStream(), [newEvent('contract.wait.many')]));
          await Promise.all(waits);
          await stillWaiting;
        },
      );

      it(
        `${adapterName}: waitForAppend resolves after its timeout when nothing is appended`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          const head = await log().headPosition();
          await log().waitForAppend(head, 25);
          assert.equal(await log().headPosition(), head);
        },
      );

      it(
        `${adapterName}: waitForAppend resolves when its signal aborts`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          const head = await log().headPosition();
          const controller = new AbortController();
          const waiting = log().waitForAppend(head, HOUR, controller.signal);
          controller.abort();
          await waiting;
          await log().waitForAppend(head, HOUR, AbortSignal.abort());
          assert.equal(await log().headPosition(), head);
        },
      );
    });

    describe(`${adapterName}: seeking by time`, () => {
      it(
        `${adapterName}: positionBefore(t) splits the log into events recorded before t and at or after it`,
        { ...skipFor(skip), timeout: 60_000 },
        async () => {
          const stream = freshStream();
          const batches: RecordedEvent[][] = [];
          for (let i = 0; i < 3; i += 1) {
            expectOk(await log().append(stream, [newEvent('contract.seek'), newEvent('contract.seek')]));
            // Let the clock move so the batches are recorded at different times (no assertion on time).
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          const stored = await log().readStream(stream);
          for (let i = 0; i < 3; i += 1) batches.push(stored.slice(i * 2, i * 2 + 2));
          const all = await readAllPages(log(), 0);
          const head = await log().headPosition();
          const ms = (iso: string) => Date.parse(iso);
          const probes = [
            '1970-01-01T00:00:00.000Z',
            '2999-01-01T00:00:00.000Z',
            ...stored.flatMap((e) => [
              e.recordedAt,
              new Date(ms(e.recordedAt) + 1).toISOString(),
              new Date(ms(e.recordedAt) - 1).toISOString(),
            ]),
          ];
          for (const time of probes) {
            const position = await log().positionBefore(time);
            assert.ok(
              position === 0 || all.some((e) => e.position === position),
              `${time}: ${position} is 0 or the position of an event`,
            );
            for (const event of all) {
              if (event.position <= position)
                assert.ok(
                  ms(event.recordedAt) < ms(time),
                  `${time}: ${event.position} (${event.recordedAt}) is at or below ${position}`,
                );
              else
                assert.ok(
                  ms(event.recordedAt) >= ms(time),
                  `${time}: ${event.position} (${event.recordedAt}) is above ${position}`,
                );
            }
          }
          assert.equal(await log().positionBefore('1970-01-01T00:00:00Z'), 0);
          assert.equal(await log().positionBefore('2999-01-01T00:00:00Z'), head);
          // A range starting at the second batch's time starts no later than the second batch.
          const second = batches[1]![0]!;
          const from = await log().positionBefore(second.recordedAt);
          assert.ok(from < second.position && from >= batches[0]![0]!.position);
          const next = await log().readAll({ afterPosition: from, limit: 1 });
          assert.ok(next[0] && ms(next[0].recordedAt) >= ms(second.recordedAt));
        },
      );

      it(`${adapterName}: positionBefore refuses a time that is not ISO 8601`, skipFor(skip), async () => {
        await assert.rejects(log().positionBefore('not a time'), RangeError);
        await assert.rejects(log().positionBefore(''), RangeError);
      });

      it(`${adapterName}: positionBefore on an empty log is 0`, skipFor(skip), async () => {
        const fresh = await open();
        try {
          assert.equal(await fresh.log.positionBefore('2999-01-01T00:00:00Z'), 0);
          assert.equal(await fresh.log.positionBefore('1970-01-01T00:00:00Z'), 0);
        } finally {
          await fresh.dispose();
        }
      });

      if (options.processClock)
        it(
          `${adapterName}: recordedAt is the appending process's clock, never before the last event's`,
          skipFor(skip),
          async () => {
            // A log of its own: a clock set a year ahead would hold the shared log's recordedAt there.
            const fresh = await open();
            const ahead = Date.now() + 365 * 24 * HOUR;
            vi.useFakeTimers({ toFake: ['Date'], now: ahead });
            try {
              const stream = freshStream();
              const first = expectOk(await fresh.log.append(stream, [newEvent('contract.clock')]));
              vi.setSystemTime(ahead + 1_500);
              await fresh.log.appendBatch([{ stream, events: [newEvent('contract.clock')] }]);
              // The clock goes back: recordedAt stays at the last event's.
              vi.setSystemTime(ahead - HOUR);
              expectOk(await fresh.log.append(stream, [newEvent('contract.clock')]));
              assert.deepEqual(
                (await fresh.log.readStream(stream)).map((e) => e.recordedAt),
                [ahead, ahead + 1_500, ahead + 1_500].map((ms) => new Date(ms).toISOString()),
              );
              assert.equal(
                await fresh.log.positionBefore(new Date(ahead + 1).toISOString()),
                first.events[0]!.position,
              );
            } finally {
              vi.useRealTimers();
              await fresh.dispose();
            }
          },
        );
    });

    describe(`${adapterName}: identity and JSON`, () => {
      it(`${adapterName}: archiveId is stable across calls and connections`, skipFor(skip), async () => {
        const id = await log().archiveId();
        assert.equal(typeof id, 'string');
        assert.ok(id.length > 0);
        assert.equal(await log().archiveId(), id);
        assert.equal(await (await connect()).archiveId(), id);
      });

      it(`${adapterName}: a fresh log is empty and has its own archiveId`, skipFor(skip), async () => {
        const fresh = await open();
        try {
          assert.equal(await fresh.log.headPosition(), 0);
          assert.deepEqual(await fresh.log.readAll({ afterPosition: 0, limit: 10 }), []);
          assert.equal(await fresh.log.streamRevision('anything'), null);
          const freshId = await fresh.log.archiveId();
          assert.notEqual(freshId, await log().archiveId());
          const again = await fresh.connect();
          assert.equal(await again.archiveId(), freshId);
          await again.close();
          const first = expectOk(await fresh.log.append(freshStream(), [newEvent('contract.fresh')]));
          assert.ok(first.events[0]!.position > 0, 'positions start above 0, so afterPosition 0 reads everything');
          assert.deepEqual(
            (await fresh.log.readAll({ afterPosition: 0, limit: 10 })).map((e) => e.id),
            [first.events[0]!.id],
          );
        } finally {
          await fresh.dispose();
        }
      });

      it(`${adapterName}: data and metadata round-trip as the same JSON`, skipFor(skip), async () => {
        const stream = freshStream();
        const data = {
          text: 'plain "quoted" \\ back\nnew line\ttab',
          unicode: 'ünïcødé — 日本語 — 🚀',
          lone: '\ud800 half',
          numbers: [0, -1.5, 3.14159, 9007199254740991, 1e21, -0.000001],
          flags: [true, false, null],
          nested: { zeta: { deep: [[], {}, [{ x: null }]] }, alpha: '' },
          empty: {},
        };
        const metadata = { correlationId: 'c-1', source: { kind: 'kafka', offset: '42' }, list: [1, 'two'] };
        const event = newEvent('contract.json', data, metadata);
        expectOk(await log().append(stream, [event]));
        const [stored] = await log().readStream(stream);
        assert.ok(stored);
        assert.equal(JSON.stringify(stored.data), JSON.stringify(data), 'data: same JSON, same key order');
        assert.equal(JSON.stringify(stored.metadata), JSON.stringify(metadata), 'metadata: same JSON, same key order');
        assert.deepEqual(stored.data, data);
      });
    });
  });
}

function assertOneWinner(results: readonly AppendResult[], winnerRevision: number): void {
  const winners = results.filter((r) => r.ok);
  assert.equal(winners.length, 1, `exactly one append wins: ${JSON.stringify(results)}`);
  assert.equal(winners[0]!.ok && winners[0]!.revision, winnerRevision);
  for (const loser of results.filter((r) => !r.ok)) {
    assert.deepEqual(loser, { ok: false, reason: 'wrong_expected_revision', actualRevision: winnerRevision });
  }
}
