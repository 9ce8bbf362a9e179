/**
 * What the PostgreSQL generation space promises beyond the contract (readmodels/postgres/): the replay
 * lock's fencing token stops a replay whose lease was taken over from writing its build, switching or
 * removing; the commit feed delivers commits by NOTIFY and reconnects after its connection is killed;
 * an unreachable server is an outage; checkpoints are read once per event-loop turn.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createCommitSignals } from '../../readmodels/commit-signal.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import { ReplayFencedError } from '../../readmodels/generations/port.ts';
import { createPostgresGenerationSpace } from '../../readmodels/postgres/postgres-generations.ts';
import { createPostgresReadStore } from '../../readmodels/postgres/postgres-read-store.ts';
import { isStoreUnavailable } from '../../service/store-failures.ts';
import { openGenerationSpace, projectionLimits } from '../../service/stores.ts';
import { parseConfig } from '../../config/config.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';

const skip = await postgresSkipReason();

function doc(id: string, seq: number): DocWrite {
  const value = { id };
  return {
    id,
    doc: value,
    json: JSON.stringify(value),
    state: null,
    seq,
    writtenAt: '2026-11-20T08:00:00.000Z',
    sortKey: '2026-11-20T08:00:00.000Z',
    facet: 'visible',
    keys: {},
  };
}

describe('PostgreSQL generation space', () => {
  let database: ScratchDatabase | undefined;
  beforeAll(async () => {
    if (!skip) database = await scratchDatabase('pulseboard_space');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it(
    'a replay whose lease was taken over can no longer write its build, switch, or remove: the fencing token refuses it',
    skipFor(skip),
    async () => {
      const clock = { now: Date.parse('2026-11-22T08:00:00Z') };
      const options = { clock: () => clock.now, leaseMs: 30_000 };
      const stalled = createPostgresGenerationSpace(database!.url, options);
      const other = createPostgresGenerationSpace(database!.url, options);
      try {
        const first = await stalled.acquireReplayLock();
        assert.ok(first.ok);
        const build = stalled.open(1, 'build', first.fence);
        assert.deepEqual(await build.commit('projects', [doc('a', 1)], 1, 0), { ok: true });

        // The first replay stalls past its lease; a second one takes the lock over.
        clock.now += 60_000;
        const second = await other.acquireReplayLock();
        assert.ok(second.ok, second.ok ? '' : second.reason);
        assert.equal(await first.held(), false);

        await assert.rejects(build.commit('projects', [doc('b', 2)], 2, 1), ReplayFencedError);
        assert.equal(await build.checkpoint('projects'), 1, 'the fenced commit wrote nothing');
        const switched = await stalled.switchPointer(0, 1, first.fence);
        assert.equal(switched.ok, false);
        assert.match(switched.ok ? '' : switched.reason, /taken over/);
        assert.equal((await stalled.remove(1, first.fence)).ok, false);
        assert.deepEqual(await other.list(), [1], 'the fenced removal left the generation');
        assert.deepEqual(await other.readPointer(), { ok: true, generation: 0 });

        // The new holder's own build, switch and removal go through.
        const own = other.open(1, 'build', second.fence);
        assert.deepEqual(await own.commit('projects', [doc('b', 2)], 2, 1), { ok: true });
        await own.close();
        await build.close();
        assert.deepEqual(await other.switchPointer(0, 1, second.fence), { ok: true });
        assert.deepEqual(await other.remove(0, second.fence), { ok: true });
        await second.release();
        await first.release();
      } finally {
        await stalled.close();
        await other.close();
      }
    },
  );

  it(
    'the commit feed hears every commit by NOTIFY, and a killed LISTEN connection is reopened',
    skipFor(skip),
    async () => {
      const space = createPostgresGenerationSpace(database!.url);
      const store = space.open(3);
      const signals = createCommitSignals(space.commitFeed!(), { baseDelayMs: 1, maxDelayMs: 10 });
      const heard: string[] = [];
      let wake: (() => void) | undefined;
      const next = () =>
        new Promise<void>((resolve) => {
          wake = resolve;
        });
      signals.subscribe((collection, checkpoint) => {
        heard.push(`${collection}@${checkpoint}`);
        wake?.();
      });
      const states: boolean[] = [];
      let changed: (() => void) | undefined;
      const stateChange = () =>
        new Promise<void>((resolve) => {
          changed = resolve;
        });
      let live = stateChange();
      signals.follow((complete) => {
        states.push(complete);
        changed?.();
      });
      const admin = new pg.Client({ connectionString: database!.url });
      await admin.connect();
      try {
        await live;
        assert.equal(signals.feedState(), 'live');
        const first = next();
        await store.commit('calls', [doc('c', 5)], 5);
        await first;
        assert.deepEqual(heard, ['calls@5']);

        // The server ends the LISTEN connection: the feed fails, and is reopened live.
        const lost = stateChange();
        await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`,
        );
        await lost;
        live = stateChange();
        await live;
        assert.deepEqual(states, [true, false, true]);
        const second = next();
        await store.commit('calls', [doc('d', 9)], 9);
        await second;
        assert.deepEqual(heard, ['calls@5', 'calls@9']);
      } finally {
        await admin.end();
        await signals.close();
        await store.close();
        await space.close();
      }
    },
  );

  it(
    "checkpoints are read by one statement per event-loop turn; a fresh read and a later turn see other connections' commits",
    skipFor(skip),
    async () => {
      const reader = createPostgresReadStore(database!.url);
      const writer = createPostgresReadStore(database!.url);
      const query = pg.Client.prototype.query;
      let statements = 0;
      pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
        statements += 1;
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      try {
        await writer.commit('turn-a', [doc('a', 3)], 3);
        await writer.commit('turn-b', [doc('b', 4)], 4);
        await reader.checkpoint('turn-a', { fresh: true }); // its tables made, its statements prepared
        await new Promise((resolve) => setImmediate(resolve));
        statements = 0;
        const together = await Promise.all(['turn-a', 'turn-b', 'turn-c'].map((c) => reader.checkpoint(c)));
        assert.deepEqual(together, [3, 4, 0]);
        // The answer's turn: the reads after it are answered without a statement.
        assert.equal(await reader.checkpoint('turn-b'), 4);
        assert.equal(statements, 1, 'three reads issued together and one after them: one statement');

        await writer.commit('turn-a', [doc('a', 7)], 7);
        assert.equal(await reader.checkpoint('turn-a', { fresh: true }), 7, 'a fresh read queries');
        await writer.commit('turn-b', [doc('b', 8)], 8);
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(await reader.checkpoint('turn-b'), 8, 'a later turn reads again');
        assert.equal(await reader.checkpoint('turn-a'), 7);
        // The store's own commit drops what it kept.
        await reader.commit('turn-a', [doc('a', 9)], 9);
        assert.equal(await reader.checkpoint('turn-a'), 9);
      } finally {
        pg.Client.prototype.query = query;
        await reader.close();
        await writer.close();
      }
    },
  );

  it('a server that cannot be reached answers a rejected promise that reads as an outage', skipFor(skip), async () => {
    const store = createPostgresReadStore('postgres://postgres@127.0.0.1:1/none');
    try {
      const error = await store.checkpoint('projects').then(
        () => null,
        (caught: unknown) => caught,
      );
      assert.ok(error, 'the read was refused');
      assert.equal(isStoreUnavailable(error), true, String(error));
    } finally {
      await store.close();
    }
  });

  it(
    'POSTGRES_URL puts the generations in PostgreSQL, committed tens of thousands of documents at a time',
    skipFor(skip),
    async () => {
      const parsed = parseConfig({ POSTGRES_URL: database!.url });
      assert.ok(parsed.ok);
      const space = await openGenerationSpace(parsed.config);
      try {
        assert.equal(space.label(2), 'schema pulseboard_g2');
        assert.equal(space.removalDisturbsUsers, true);
        const store = space.open(4);
        await store.commit('projects', [doc('p', 1)], 1);
        await store.close();
        assert.ok((await space.list()).includes(4));
      } finally {
        await space.close();
      }
      for (const purpose of ['live', 'replay'] as const) {
        const limits = projectionLimits(parsed.config, purpose);
        assert.ok(
          limits.maxPendingDocs >= 20_000 && limits.maxPendingDocs <= 100_000,
          `${purpose}: ${limits.maxPendingDocs}`,
        );
      }
    },
  );
});
