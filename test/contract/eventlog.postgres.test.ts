/**
 * The EventLog contract on the machine's PostgreSQL (test/support/postgres.ts), each run in a database
 * of its own that it drops; then what only a server shows: an append that commits after a later one
 * is never skipped by a follower, processes racing for one expected revision, the listening
 * connection killed under a waiter, a server that does not answer.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { parseConfig } from '../../config/config.ts';
import { absentEmbeddedLog, openEventLog } from '../../eventstore/open.ts';
import { afterEach, describe, it } from 'vitest';
import {
  EventLogUnavailableError,
  type AppendResult,
  type EventLog,
  type NewEvent,
  type RecordedEvent,
} from '../../eventstore/port.ts';
import { LISTENER_APPLICATION_NAME } from '../../eventstore/postgres/append-listener.ts';
import { createPostgresEventLog, type PostgresEventLogOptions } from '../../eventstore/postgres/postgres-event-log.ts';
import { isStoreUnavailable } from '../../service/store-failures.ts';
import { POSTGRES_URL, postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';
import { eventLogContract } from './eventlog.contract.ts';

const skip = await postgresSkipReason();
const HOUR = 3_600_000;

async function openScratchLog(options: PostgresEventLogOptions = {}) {
  const db = await scratchDatabase('pb_eventlog');
  const log = createPostgresEventLog(db.url, options);
  const connections: EventLog[] = [];
  return {
    db,
    log,
    async connect(more: PostgresEventLogOptions = {}) {
      const connection = createPostgresEventLog(db.url, more);
      connections.push(connection);
      return connection;
    },
    async dispose() {
      for (const connection of connections) await connection.close().catch(() => undefined);
      await log.close();
      await db.drop();
    },
  };
}

eventLogContract('postgres', () => openScratchLog(), { skip, processClock: true });

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function scratch(options: PostgresEventLogOptions = {}) {
  const handle = await openScratchLog(options);
  cleanups.push(() => handle.dispose());
  return handle;
}

/** A client of its own on the scratch database, for looking at and acting on the server's sessions. */
async function admin(db: Pick<ScratchDatabase, 'url'>): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => undefined);
  await client.connect();
  cleanups.push(() => client.end().catch(() => undefined));
  return client;
}

const event = (type = 'pg.test', data: unknown = { n: 1 }): NewEvent => ({ id: randomUUID(), type, data });

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves once `done()` holds, asking the server again after each answer (no timer decides anything). */
async function until(done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((resolve) => setImmediate(resolve));
}

describe('EventLog postgres: a follower never skips an append that commits after a later one was assigned', () => {
  it(
    'postgres: an append held between its positions and its commit holds the next append back; the follower reads both, in order',
    skipFor(skip),
    async () => {
      const reached = deferred();
      const release = deferred();
      let hold = true;
      const { db, log, connect } = await scratch();
      const holder = await connect({
        async beforeCommit() {
          if (!hold) return;
          hold = false;
          reached.resolve();
          await release.promise;
        },
      });
      const watcher = await admin(db);
      const base = await log.headPosition();
      const late = holder.append(`late-${randomUUID()}`, [event('pg.late')]);
      await reached.promise;
      let settled = false;
      const early = log.append(`early-${randomUUID()}`, [event('pg.early')]).finally(() => {
        settled = true;
      });
      // The second append either lands (nothing orders it after the held one) or waits on a lock.
      await until(
        async () =>
          settled ||
          (
            await watcher.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows[0]!.n > 0,
      );
      // A follower reads the log while one append is uncommitted, then again once both committed.
      const followed: RecordedEvent[] = [];
      const follow = async () => {
        const page = await log.readAll({ afterPosition: followed.at(-1)?.position ?? base, limit: 100 });
        followed.push(...page);
      };
      await follow();
      release.resolve();
      const [heldResult, nextResult] = await Promise.all([late, early]);
      await follow();
      const stored = await log.readAll({ afterPosition: base, limit: 100 });
      assert.equal(stored.length, 2);
      assert.deepEqual(
        followed.map((e) => [e.type, e.position]),
        stored.map((e) => [e.type, e.position]),
        'the follower read every event, none skipped',
      );
      assert.ok(heldResult.ok && nextResult.ok);
      assert.ok(
        heldResult.events[0]!.position < nextResult.events[0]!.position,
        'the held append took the first position',
      );
    },
  );
});

describe('EventLog postgres: an append that cannot take the lock', () => {
  it(
    'postgres: an append refused by a lock_timeout leaves its connection usable for the next',
    skipFor(skip),
    async () => {
      const reached = deferred();
      const release = deferred();
      let hold = true;
      const { db, connect } = await scratch();
      const holder = await connect({
        async beforeCommit() {
          if (!hold) return;
          hold = false;
          reached.resolve();
          await release.promise;
        },
      });
      // One connection, so the next call gets the one the refused append used.
      const refusing = createPostgresEventLog(`${db.url}?options=${encodeURIComponent('-c lock_timeout=200')}`, {
        poolSize: 1,
      });
      cleanups.push(() => refusing.close());
      await refusing.headPosition();
      const held = holder.append(`held-${randomUUID()}`, [event()]);
      await reached.promise;
      await assert.rejects(refusing.append(`refused-${randomUUID()}`, [event()]), { code: '55P03' });
      release.resolve();
      assert.ok((await held).ok);
      const next = await refusing.append(`next-${randomUUID()}`, [event()]);
      assert.ok(next.ok);
      assert.equal(await refusing.headPosition(), next.events[0]!.position);
    },
  );
});

const RACER = join(import.meta.dirname, 'fixtures', 'postgres-append-racer.ts');

type Racer = { child: ChildProcessWithoutNullStreams; lines: AsyncIterableIterator<string> };

function startRacer(url: string, stream: string, expected: string, eventId: string): Racer {
  const child = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', RACER, url, stream, expected, eventId],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.on('exit', (code) => {
    if (code !== null && code !== 0) process.stderr.write(`racer exited with ${code}: ${stderr}\n`);
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
  });
  return { child, lines: createInterface({ input: child.stdout })[Symbol.asyncIterator]() };
}

async function nextLine(racer: Racer): Promise<string> {
  const next = await racer.lines.next();
  assert.equal(next.done, false, 'racer ended without answering');
  return next.value as string;
}

async function exited(racer: Racer): Promise<number | null> {
  if (racer.child.exitCode !== null || racer.child.signalCode !== null) return racer.child.exitCode;
  const [code] = (await once(racer.child, 'exit')) as [number | null];
  return code;
}

describe('EventLog postgres: separate processes on one database', () => {
  it(
    'postgres: processes racing for the same expected revision: exactly one wins',
    { ...skipFor(skip), timeout: 120_000 },
    async () => {
      const { db, log } = await scratch();
      for (let round = 0; round < 2; round += 1) {
        const stream = `race-${randomUUID()}`;
        assert.equal((await log.append(stream, [event('contract.race')], 'no_stream')).ok, true);
        const ids = Array.from({ length: 4 }, () => randomUUID());
        const racers = ids.map((id) => startRacer(db.url, stream, '0', id));
        for (const racer of racers) assert.equal(await nextLine(racer), 'ready');
        // Every process has its pool connected before any of them is told to append.
        for (const racer of racers) racer.child.stdin.write('go\n');
        const results = await Promise.all(
          racers.map(async (racer) => JSON.parse(await nextLine(racer)) as AppendResult),
        );
        const winners = results.filter((r) => r.ok);
        assert.equal(winners.length, 1, JSON.stringify(results));
        for (const loser of results.filter((r) => !r.ok))
          assert.deepEqual(loser, { ok: false, reason: 'wrong_expected_revision', actualRevision: 1 });
        const stored = await log.readStream(stream);
        assert.deepEqual(
          stored.map((e) => e.revision),
          [0, 1],
        );
        assert.equal(stored[1]!.id, ids[results.findIndex((r) => r.ok)]);
        assert.deepEqual(await Promise.all(racers.map(exited)), [0, 0, 0, 0]);
      }
    },
  );
});

describe('EventLog postgres: connections lost', () => {
  it(
    'postgres: the listening connection killed: waiters wake, it comes back, and appends still wake them after',
    { ...skipFor(skip), timeout: 60_000 },
    async () => {
      const states = new EventEmitter();
      const { db, log, connect } = await scratch({ onSubscriptionState: (state) => states.emit(state) });
      const other = await connect();
      const watcher = await admin(db);
      const listenerPid = async () =>
        (
          await watcher.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
            [LISTENER_APPLICATION_NAME],
          )
        ).rows.map((row) => row.pid);
      const live = () =>
        log.subscriptionState?.() === 'live' ? Promise.resolve() : once(states, 'live').then(() => undefined);
      const kill = async (pid: number) => {
        const lost = once(states, 'reconnecting');
        await watcher.query('SELECT pg_terminate_backend($1)', [pid]);
        await lost;
      };

      // Nothing is appended: only the listener lost (waiters then poll) or back can end this hour-long wait.
      const head = await log.headPosition();
      const woken = log.waitForAppend(head, HOUR);
      await live();
      const [first] = await listenerPid();
      assert.ok(first, 'one listening connection');
      await kill(first);
      await woken;
      await live();
      const [second] = await listenerPid();
      assert.ok(second && second !== first, 'a new listening connection');

      // The new connection hears appends made by another pool.
      const waiting = log.waitForAppend(head, HOUR);
      const appended = await other.append(`wake-${randomUUID()}`, [event()]);
      await waiting;
      assert.ok(appended.ok);

      // An append made while the listener is down still ends a wait.
      const after = appended.events[0]!.position;
      const duringLoss = log.waitForAppend(after, HOUR);
      await kill(second);
      assert.equal(log.subscriptionState?.(), 'reconnecting');
      assert.ok((await other.append(`wake-${randomUUID()}`, [event()])).ok);
      await duringLoss;
      await live();
    },
  );

  it(
    'postgres: while the listener cannot reconnect, a waiter still ends on an append from another process',
    { ...skipFor(skip), timeout: 60_000 },
    async () => {
      const states = new EventEmitter();
      const { db, log, connect } = await scratch({ onSubscriptionState: (state) => states.emit(state) });
      const other = await connect();
      // On the cluster's own database: a database cannot refuse connections from a session inside it.
      const watcher = await admin({ url: POSTGRES_URL });
      const live = once(states, 'live');
      await log.waitForAppend(await log.headPosition(), 1);
      await live;
      // Each pool holds an open connection, just used (idle ones close after 10 s): they keep working
      // while new ones are refused.
      const head = await log.headPosition();
      await other.headPosition();
      await watcher.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
      cleanups.push(async () => {
        await watcher.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
      });
      const lost = once(states, 'reconnecting');
      await watcher.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`,
        [db.name, LISTENER_APPLICATION_NAME],
      );
      await lost;
      // Nothing can notify this waiter, and the listener cannot come back: only reading the head ends it.
      const waiting = log.waitForAppend(head, HOUR);
      const appended = await other.append(`down-${randomUUID()}`, [event()]);
      assert.ok(appended.ok);
      await waiting;
      assert.equal(log.subscriptionState?.(), 'reconnecting', 'the listener was not back');
    },
  );

  it(
    "postgres: pool connections killed by the server: an idle one is replaced, an append's one fails as an outage and the retry lands once",
    { ...skipFor(skip), timeout: 60_000 },
    async () => {
      let killOwnBackend = false;
      const { db, log } = await scratch({
        async beforeCommit() {
          if (!killOwnBackend) return;
          killOwnBackend = false;
          // The backend holding the append lock: this transaction's own.
          await watcher.query(
            `SELECT pg_terminate_backend(pid) FROM pg_locks
               WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          );
        },
      });
      const watcher = await admin(db);
      await log.headPosition();
      const poolBackends = async () =>
        (
          await watcher.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
               WHERE datname = current_database() AND application_name = 'pulseboard-event-log'`,
          )
        ).rows[0]!.n;
      await watcher.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE datname = current_database() AND application_name = 'pulseboard-event-log'`,
      );
      // Gone on the server, so the idle client hears the goodbye (an 'error' no one handles would end
      // the process). Should the pool hand it out before it has read it, that one call fails as an
      // outage; the next call answers.
      await until(async () => (await poolBackends()) === 0);
      const after = await log.headPosition().then(
        () => null,
        (error: unknown) => error,
      );
      if (after !== null) assert.ok(isStoreUnavailable(after), String(after));
      assert.equal(await log.headPosition(), 0);

      killOwnBackend = true;
      const stream = `killed-${randomUUID()}`;
      const events = [event(), event()];
      const failed = await log.append(stream, events).then(
        () => null,
        (error: unknown) => error,
      );
      assert.ok(failed instanceof EventLogUnavailableError, String(failed));
      assert.ok(isStoreUnavailable(failed));
      assert.equal(await log.streamRevision(stream), null, 'the killed transaction stored nothing');
      const retried = await log.append(stream, events);
      assert.ok(retried.ok);
      assert.deepEqual(
        retried.events.map((e) => [e.revision, e.duplicate]),
        [
          [0, false],
          [1, false],
        ],
      );
    },
  );

  it('postgres: a server that does not answer is an outage, named without the password', async () => {
    const log = createPostgresEventLog('postgres://pulse:s3cret-pw@127.0.0.1:1/nowhere', { connectTimeoutMs: 5_000 });
    cleanups.push(() => log.close());
    for (const call of [() => log.headPosition(), () => log.append('s', [event()]), () => log.archiveId()]) {
      const error = await call().then(
        () => null,
        (failure: unknown) => failure,
      );
      assert.ok(error instanceof EventLogUnavailableError, String(error));
      assert.ok(isStoreUnavailable(error));
      assert.match(error.message, /^PostgreSQL at 127\.0\.0\.1:1\/nowhere does not answer \(.+\)$/);
      assert.doesNotMatch(error.message, /s3cret|pulse:/);
    }
  });
});

describe('EventLog postgres: chosen by the configuration', () => {
  it(
    'postgres: POSTGRES_URL opens the log on that database, with no embedded file asked for',
    skipFor(skip),
    async () => {
      const { db } = await scratch();
      const parsed = parseConfig({ POSTGRES_URL: db.url, PULSEBOARD_DATA_DIR: '/nonexistent/pulseboard-data' });
      assert.ok(parsed.ok);
      assert.equal(absentEmbeddedLog(parsed.config), null);
      const log = await openEventLog(parsed.config);
      cleanups.push(() => log.close());
      assert.equal(log.subscriptionState?.(), 'idle');
      const appended = await log.append(`config-${randomUUID()}`, [event('pg.config')]);
      assert.ok(appended.ok);
      const watcher = await admin(db);
      const { rows } = await watcher.query<{ type: string }>('SELECT type FROM pulseboard_events');
      assert.deepEqual(rows, [{ type: 'pg.config' }]);
    },
  );
});
