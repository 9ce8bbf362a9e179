import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/** Opens a SQLite file for one of the embedded stores: WAL, so readers never block the one writer. */
export function openSqlite(path: string): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  // First, so that even switching to WAL (or recovering the WAL a killed writer left) waits for a
  // lock another process holds instead of failing at once with "database is locked".
  db.exec('PRAGMA busy_timeout = 10000');
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('PRAGMA foreign_keys = ON');
  return db;
}

/**
 * Runs `work`'s reads inside one read transaction (BEGIN … COMMIT: one snapshot for its statements,
 * whatever another connection commits meanwhile), unless a transaction is open already.
 */
export function inReadTransaction<T>(db: DatabaseSync, work: () => T): T {
  if (db.isTransaction) return work();
  db.exec('BEGIN');
  try {
    return work();
  } finally {
    db.exec('COMMIT');
  }
}

/** Runs `work` inside BEGIN IMMEDIATE … COMMIT, rolling back on any throw. */
export function inTransaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = work();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}
