/**
 * A process's presence in the PostgreSQL generation space, on the process's one listening connection
 * (config/postgres-listener.ts, a session shared with the event log's and commits' LISTENs):
 * - which generations it uses: a session-level shared advisory lock per generation, taken when it starts
 *   using one and released when it stops. PostgreSQL drops a session's locks when its connection ends,
 *   so a process that dies stops counting at once, and nothing is written while nothing changes (the
 *   announcement table renewed every second by every process is gone).
 * - the pointer's switches: the session LISTENs on the channel a switch NOTIFYs inside its transaction,
 *   so serving processes read the pointer when it changes instead of every 200 ms.
 * A lost connection fails the pointer feed (commit-signal.ts reopens it after a backoff, and the
 * generational store polls quickly meanwhile) and is reconnected, the locks taken again, one second later.
 */
import type pg from 'pg';
import { listen, listenerSession } from '../../config/postgres-listener.ts';
import type { CommitFeed } from '../commit-signal.ts';
import { PostgresConnectionError } from './postgres-faults.ts';

/** The channel a pointer switch NOTIFYs (its payload: the generation now live). */
export const POINTER_CHANNEL = 'pulseboard_pointer';
/** The first key of the generation-use advisory locks (two int4 keys: this, then the generation). */
export const USE_LOCK_CLASS = 0x70627573;

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
  let session: { client: pg.Client; close(): Promise<void> } | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let held = new Set<number>();
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  function lost(client: pg.Client): void {
    if (session?.client !== client) return;
    session = undefined;
    held = new Set();
    if (users.size > 0 && !closed && !retry) {
      retry = setTimeout(() => {
        retry = undefined;
        serially(sync).catch(() => undefined);
      }, 1_000);
      retry.unref();
    }
  }

  function connect(): Promise<pg.Client> {
    if (session) return Promise.resolve(session.client);
    connecting ??= (async () => {
      let client: pg.Client | undefined;
      const use = listenerSession(url, () => {
        if (client) lost(client);
      });
      client = await use.client;
      if (closed) {
        await use.close();
        throw new PostgresConnectionError('the generation space is closed');
      }
      held = new Set();
      session = { client, close: use.close };
      return client;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  /** Takes the locks of generations now used and releases those no longer used. */
  async function sync(): Promise<void> {
    const wanted = new Set([...users.values()].flat());
    if (wanted.size === 0 && held.size === 0) return;
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
      open: (handlers) =>
        listen(url, POINTER_CHANNEL, {
          live: () => handlers.live(),
          notify: (payload) => handlers.commit('pointer', Number(payload ?? -1)),
          failed: (error) => handlers.failed(error),
        }),
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      users.clear();
      // The session outlives this space when another shares it: its locks are released, not dropped.
      await serially(sync).catch(() => undefined);
      const own = session;
      session = undefined;
      await own?.close();
    },
  };
}
