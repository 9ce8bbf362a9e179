/**
 * One PostgreSQL connection per process for every LISTEN and the presence session
 * (config/postgres-listener.ts): the event log's appends, the read models' commits and the pointer's
 * switches are heard on one connection, which also holds the generation-use locks; killed by the
 * server, every feed fails over to polling and comes back listening on a new one.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { LISTENER_APPLICATION_NAME } from '../../eventstore/postgres/append-listener.ts';
import { createPostgresEventLog } from '../../eventstore/postgres/postgres-event-log.ts';
import { createCommitSignals } from '../../readmodels/commit-signal.ts';
import { createPostgresGenerationSpace } from '../../readmodels/postgres/postgres-generations.ts';
import { USE_LOCK_CLASS } from '../../readmodels/postgres/postgres-presence.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';
import { eventually as pollUntil } from '../replay/support.ts';

const skip = await postgresSkipReason();
const HOUR = 3_600_000;

/** A bound, not a timing: true once `check` holds, false after 20 s. */
const eventually = (check: () => Promise<boolean> | boolean) => pollUntil(check, 200, 100);

describe('PostgreSQL: one listening connection per process', () => {
  let database: ScratchDatabase | undefined;
  beforeAll(async () => {
    if (!skip) database = await scratchDatabase('pulseboard_listener');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it(
    'appends, commits and pointer switches heard on one connection that also holds the presence locks; killed, it re-listens',
    { ...skipFor(skip), timeout: 60_000 },
    async () => {
      const url = database!.url;
      const subscription: string[] = [];
      const log = createPostgresEventLog(url, { onSubscriptionState: (state) => subscription.push(state) });
      const space = createPostgresGenerationSpace(url);
      const signals = { baseDelayMs: 1, maxDelayMs: 10 };
      const commits = createCommitSignals(space.commitFeed!(), signals);
      const pointer = createCommitSignals(space.pointerFeed!(), signals);
      const commitStates: boolean[] = [];
      const pointerStates: boolean[] = [];
      commits.follow((live) => commitStates.push(live));
      pointer.follow((live) => pointerStates.push(live));
      const heard: string[] = [];
      commits.subscribe((collection, checkpoint) => heard.push(`${collection}@${checkpoint}`));
      pointer.subscribe((_, generation) => heard.push(`pointer@${generation}`));
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      const listeners = async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
            [LISTENER_APPLICATION_NAME],
          )
        ).rows.map((row) => row.pid);
      /** Backends holding a generation-use lock (the presence session). */
      const lockHolders = async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid::bigint = $1
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            [USE_LOCK_CLASS],
          )
        ).rows.map((row) => row.pid);
      const allLive = () =>
        log.subscriptionState?.() === 'live' && commits.feedState() === 'live' && pointer.feedState() === 'live';
      try {
        await log.waitForAppend(await log.headPosition(), 1);
        await space.announce('this-process', [0]);
        assert.ok(await eventually(allLive), 'every feed listens');
        const [first, ...more] = await listeners();
        assert.ok(first !== undefined && more.length === 0, `one listening connection, not ${more.length + 1}`);
        // Every other backend of the process is a pool's: none is left LISTENing.
        const others = await admin.query<{ query: string }>(
          `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND pid <> ALL($1::int[])`,
          [[first, (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid]],
        );
        assert.deepEqual(
          others.rows.filter((row) => /^\s*LISTEN/i.test(row.query)),
          [],
          'no other connection listens',
        );
        assert.deepEqual(await lockHolders(), [first], 'the presence locks are held on that same connection');

        // The server ends it: every feed fails over, and all come back on one new connection.
        await admin.query('SELECT pg_terminate_backend($1)', [first]);
        assert.ok(
          await eventually(() => commitStates.includes(false) && pointerStates.includes(false)),
          'both read-model feeds saw the loss',
        );
        assert.ok(
          subscription.includes('reconnecting'),
          `the append subscription saw it (${subscription.join(' > ')})`,
        );
        assert.ok(await eventually(allLive), 'every feed listens again');
        assert.ok(
          await eventually(async () => (await lockHolders()).length === 1),
          'the presence locks are taken again',
        );
        const [second, ...again] = await listeners();
        assert.ok(second !== undefined && second !== first && again.length === 0, 'one new listening connection');
        assert.deepEqual(await lockHolders(), [second]);

        // Each channel is heard on the new connection.
        const waiting = log.waitForAppend(await log.headPosition(), HOUR);
        const other = createPostgresEventLog(url);
        assert.ok(
          (await other.append(`listener-${randomUUID()}`, [{ id: randomUUID(), type: 'test.appended', data: {} }])).ok,
        );
        await waiting;
        await other.close();
        const store = space.open(1);
        await store.commit('calls', [], 7);
        await store.close();
        assert.deepEqual(await space.switchPointer(0, 1), { ok: true });
        assert.ok(
          await eventually(() => heard.includes('calls@7') && heard.includes('pointer@1')),
          `heard ${heard.join(', ')}`,
        );
      } finally {
        await admin.end();
        await commits.close();
        await pointer.close();
        await log.close();
        await space.close();
      }
    },
  );
});
