/**
 * The connection pool every PostgreSQL read store and generation space of a process uses, and the one
 * way they borrow a connection from it (`withClient`): an 'error' of an idle or borrowed client never
 * goes unhandled, a connection that broke is destroyed instead of returned, and a lost connection is
 * raised as PostgresConnectionError (an outage, postgres-faults.ts).
 */
import pg from 'pg';
import { PostgresConnectionError } from './postgres-faults.ts';

const INT8 = 20;

/** Clients whose connection failed: their errors are outages, and they go back to the pool destroyed. */
const broken = new WeakSet<pg.ClientBase>();

export function createPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    keepAlive: true,
    connectionTimeoutMillis: 10_000,
    // Positions and counts are bigint columns; every value the store keeps is below 2^53.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8 && format !== 'binary'
          ? Number
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client's failure (the server restarted) is the pool's to drop; the next borrow reconnects.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    // A borrowed client has no listener of the pool's: without this one its failure would be unhandled.
    client.on('error', () => broken.add(client));
    client.on('end', () => broken.add(client));
  });
  return pool;
}

function lost(error: unknown): PostgresConnectionError {
  const message = error instanceof Error ? error.message : String(error);
  return new PostgresConnectionError(`PostgreSQL connection lost: ${message}`, { cause: error });
}

/** A connection error `pg` raised without a SQLSTATE or a system code (a timeout, a refused start-up). */
const connectionFailure = (error: unknown) => !(error instanceof pg.DatabaseError);

/**
 * Runs `work` on a borrowed client. `onError` (a rollback) runs on that client when `work` fails and it
 * is still usable; a client that broke meanwhile is destroyed, and its error raised as an outage.
 */
export async function withClient<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  onError?: (client: pg.PoolClient) => Promise<unknown>,
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw connectionFailure(error) && !(error as { code?: unknown }).code ? lost(error) : error;
  }
  try {
    const result = await work(client);
    client.release();
    return result;
  } catch (error) {
    let usable = !broken.has(client);
    if (usable && onError)
      usable = await onError(client).then(
        () => true,
        () => false,
      );
    client.release(!usable);
    if (broken.has(client) && !(error instanceof pg.DatabaseError)) throw lost(error);
    throw error;
  }
}

/** A double-quoted SQL identifier (schema names are made from generation numbers; quoted all the same). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
