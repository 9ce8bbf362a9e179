/**
 * A process's presence in the PostgreSQL generation space, on one connection of its own (a session):
 * - which generations it uses: a session-level shared advisory lock per generation, taken when it starts
 *   using one and released when it stops. PostgreSQL drops a session's locks when its connection ends,
 *   so a process that dies stops counting at once, and nothing is written while nothing changes (the
 *   announcement table renewed every second by every process is gone).
 * - the pointer's switches: the session LISTENs on the channel a switch NOTIFYs inside its transaction,
 *   so serving processes read the pointer when it changes instead of every 200 ms.
 * A lost connection fails the pointer feed (commit-signal.ts reopens it after a backoff, and the
 * generational store polls quickly meanwhile) and is reconnected, the locks taken again, one second later.
 */
import pg from 'pg';
import type { CommitFeed, CommitListener } from '../commit-signal.ts';
import { PostgresConnectionError } from './postgres-faults.ts';

/** The channel a pointer switch NOTIFYs (its payload: the generation now live). */
export const POINTER_CHANNEL = 'pulseboard_pointer';
/** The first key of the generation-use advisory locks (two int4 keys: this, then the generation). */
export const USE_LOCK_CLASS = 0x70627573;

type FeedHandlers = { live(): void; commit: CommitListener; failed(error: unknown): void };

export type PostgresPresence = {
  announce(instance: string, generations: readonly number[]): Promise<void>;
  withdraw(instance: string): Promise<void>;
  /** Whether any session holds `generation`'s use lock (this one included). */
  inUse(generation: number, client: pg.ClientBase): Promise<boolean>;
  pointerFeed: CommitFeed;
  close(): Promise<void>;
};

export function postgresPresence(url: string): PostgresPresence {
  const users = new Map<string, readonly number[]>();
  const feeds = new Set<FeedHandlers>();
  let session: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let held = new Set<number>();
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  function lost(client: pg.Client, error: unknown): void {
    if (session !== client) return;
    session = undefined;
    held = new Set();
    client.end().catch(() => undefined);
    const gone = [...feeds];
    feeds.clear();
    for (const feed of gone) feed.failed(error);
    if (users.size > 0 && !closed && !retry) {
      retry = setTimeout(() => {
        retry = undefined;
        serially(sync).catch(() => undefined);
      }, 1_000);
      retry.unref();
    }
  }

  function connect(): Promise<pg.Client> {
    if (session) return Promise.resolve(session);
    connecting ??= (async () => {
      const client = new pg.Client({ connectionString: url, keepAlive: true, connectionTimeoutMillis: 10_000 });
      // Both stay attached until the end: an 'error' without a listener would end the process.
      client.on('error', (error) => lost(client, error));
      client.on('end', () => lost(client, new PostgresConnectionError('the PostgreSQL presence connection closed')));
      client.on('notification', (message) => {
        if (message.channel !== POINTER_CHANNEL) return;
        for (const feed of feeds) feed.commit('pointer', Number(message.payload ?? -1));
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${POINTER_CHANNEL}`);
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      if (closed) {
        await client.end().catch(() => undefined);
        throw new PostgresConnectionError('the generation space is closed');
      }
      held = new Set();
      session = client;
      return client;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  /** Takes the locks of generations now used and releases those no longer used. */
  async function sync(): Promise<void> {
    const wanted = new Set([...users.values()].flat());
    if (wanted.size === 0 && held.size === 0 && (feeds.size === 0 || session)) return;
    const client = await connect();
    for (const generation of wanted) {
      if (held.has(generation)) continue;
      await client.query('SELECT pg_advisory_lock_shared($1, $2)', [USE_LOCK_CLASS, generation]);
      held.add(generation);
    }
    for (const generation of [...held]) {
      if (wanted.has(generation)) continue;
      await client.query('SELECT pg_advisory_unlock_shared($1, $2)', [USE_LOCK_CLASS, generation]);
      held.delete(generation);
    }
  }

  /** Lock changes one at a time, in the order they were asked for. */
  function serially(work: () => Promise<void>): Promise<void> {
    const run = queue.then(work, work);
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    announce(instance, generations) {
      users.set(instance, [...generations]);
      return serially(sync);
    },
    withdraw(instance) {
      users.delete(instance);
      return serially(sync);
    },
    async inUse(generation, client) {
      const found = await client.query(
        `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
           AND classid::bigint = $1 AND objid::bigint = $2
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1`,
        [USE_LOCK_CLASS, generation],
      );
      return (found.rowCount ?? 0) > 0;
    },
    pointerFeed: {
      open(handlers) {
        feeds.add(handlers);
        serially(async () => void (await connect())).then(
          () => {
            if (feeds.has(handlers)) handlers.live();
          },
          (error: unknown) => {
            if (feeds.delete(handlers)) handlers.failed(error);
          },
        );
        return {
          async close() {
            feeds.delete(handlers);
          },
        };
      },
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      users.clear();
      feeds.clear();
      await queue;
      const client = session;
      session = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
