import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { StorageFaultError, type StorageFaultKind } from './storage-fault.ts';

/**
 * Opens a SQLite file for one of the embedded stores: WAL, so readers never block the one writer.
 * `pageSize` applies to a file made here only (a file's page size is fixed once it holds a table).
 */
export function openSqlite(path: string, options: { pageSize?: number } = {}): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  try {
    // First, so that even switching to WAL (or recovering the WAL a killed writer left) waits for a
    // lock another process holds instead of failing at once with "database is locked".
    db.exec('PRAGMA busy_timeout = 10000');
    // Before WAL: a new file's page size can no longer change once it is in WAL mode.
    if (options.pageSize !== undefined) db.exec(`PRAGMA page_size = ${Math.floor(options.pageSize)}`);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA foreign_keys = ON');
    // Statement journals (a multi-row statement's undo pages) in memory, not written to a temporary file page by page.
    db.exec('PRAGMA temp_store = MEMORY');
  } catch (error) {
    db.close();
    throw namedSqliteError(path, error);
  }
  return db;
}

/** SQLite's primary result codes (the low byte of node:sqlite's `errcode`) that are storage faults. */
const FAULT_OF_RESULT_CODE: ReadonlyMap<number, StorageFaultKind> = new Map([
  [13, 'disk_full'], // SQLITE_FULL
  [8, 'read_only'], // SQLITE_READONLY
  [10, 'io_error'], // SQLITE_IOERR
  [11, 'corrupt'], // SQLITE_CORRUPT
  [26, 'corrupt'], // SQLITE_NOTADB
]);

/**
 * A node:sqlite error whose result code is a storage fault, as a StorageFaultError naming the file
 * (the original kept as its cause); any other error unchanged. Typed by the result code, not its text.
 */
export function namedSqliteError(file: string, error: unknown): unknown {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  if (!(error instanceof Error) || typeof errcode !== 'number') return error;
  const kind = FAULT_OF_RESULT_CODE.get(errcode & 0xff);
  if (kind === undefined) return error;
  const errstr = (error as { errstr?: unknown }).errstr;
  const what = typeof errstr === 'string' ? errstr : `result code ${errcode}`;
  return new StorageFaultError(kind, `${file || 'in-memory database'} (SQLite: ${what})`, { cause: error });
}

function fileOf(db: DatabaseSync): string {
  return db.location() ?? ':memory:';
}

/**
 * Runs `work`'s reads inside one read transaction (BEGIN … COMMIT: one snapshot for its statements,
 * whatever another connection commits meanwhile), unless a transaction is open already.
 */
export function inReadTransaction<T>(db: DatabaseSync, work: () => T): T {
  if (db.isTransaction) return work();
  db.exec('BEGIN');
  let result: T;
  try {
    result = work();
  } catch (error) {
    endFailed(db);
    throw namedSqliteError(fileOf(db), error);
  }
  db.exec('COMMIT');
  return result;
}

/** Runs `work` inside BEGIN IMMEDIATE … COMMIT, rolling back on any throw. */
export function inTransaction<T>(db: DatabaseSync, work: () => T): T {
  const transaction = beginTransaction(db);
  try {
    const result = work();
    transaction.commit();
    return result;
  } catch (error) {
    throw transaction.abort(error);
  }
}

/**
 * A write transaction over several calls (BEGIN IMMEDIATE now): `commit` it, or `abort` it, which rolls
 * back and gives the error to throw (a storage fault named by its file).
 */
export function beginTransaction(db: DatabaseSync): { commit(): void; abort(error: unknown): unknown } {
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    throw namedSqliteError(fileOf(db), error);
  }
  return {
    commit: () => db.exec('COMMIT'),
    abort(error) {
      endFailed(db);
      return namedSqliteError(fileOf(db), error);
    },
  };
}

/**
 * Rolls back what a failure left open. After some errors (a full disk, an I/O error) SQLite has
 * rolled back by itself, and a ROLLBACK then fails: it must never replace the error that says why.
 */
function endFailed(db: DatabaseSync): void {
  if (!db.isOpen || !db.isTransaction) return;
  try {
    db.exec('ROLLBACK');
  } catch {
    // The transaction is gone either way; the caller's error is the one worth reporting.
  }
}
