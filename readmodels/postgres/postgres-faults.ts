/**
 * How the PostgreSQL read store tells an outage and a storage fault, by class and SQLSTATE, never by
 * message text. `pg` raises a server's refusal as a DatabaseError carrying the SQLSTATE, a socket's
 * failure as a Node system error (ECONNREFUSED … , told by service/store-failures.ts), and a lost
 * connection as a plain Error: the store wraps the last in PostgresConnectionError at its boundary
 * (postgres-pool.ts), knowing from the client's own 'error'/'end' that the connection is gone.
 */
import pg from 'pg';
import { recogniseDriverOutages } from '../../config/driver-outages.ts';
import { StorageFaultError, type StorageFaultKind } from '../../config/storage-fault.ts';

/** The connection to the server was lost or never made; `cause` is what `pg` raised. */
export class PostgresConnectionError extends Error {
  override name = 'PostgresConnectionError';
  readonly code = 'POSTGRES_CONNECTION_LOST';
}

/**
 * SQLSTATEs of a server that is down, starting, shutting down or full of connections: class 08
 * (connection exception), 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now,
 * 53300 too_many_connections.
 */
const OUTAGE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

export function isPostgresOutage(error: object): boolean {
  if (error instanceof PostgresConnectionError) return true;
  if (!(error instanceof pg.DatabaseError) || typeof error.code !== 'string') return false;
  return error.code.startsWith('08') || OUTAGE_STATES.has(error.code);
}

recogniseDriverOutages(isPostgresOutage);

/** SQLSTATEs that are storage faults (PostgreSQL's errcodes.txt). */
const FAULT_OF_STATE: ReadonlyMap<string, StorageFaultKind> = new Map([
  ['53100', 'disk_full'], // disk_full
  ['25006', 'read_only'], // read_only_sql_transaction (a standby, or default_transaction_read_only)
  ['58030', 'io_error'], // io_error
  ['XX001', 'corrupt'], // data_corrupted
  ['XX002', 'corrupt'], // index_corrupted
]);

/** A PostgreSQL error that is a storage fault, as a StorageFaultError naming its SQLSTATE; any other error unchanged. */
export function namedPostgresError(error: unknown): unknown {
  if (!(error instanceof pg.DatabaseError) || typeof error.code !== 'string') return error;
  const kind = FAULT_OF_STATE.get(error.code);
  if (kind === undefined) return error;
  return new StorageFaultError(kind, `PostgreSQL read store refused the write (SQLSTATE ${error.code})`, {
    cause: error,
  });
}
