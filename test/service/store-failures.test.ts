/** A store outage is told by the error's class or code, never by its message. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { UnavailableError } from '@kurrent/kurrentdb-client';
import { MongoNetworkError, MongoServerSelectionError } from 'mongodb';
import { it } from 'vitest';
import { EventLogUnavailableError } from '../../eventstore/port.ts';
import { isStoreUnavailable } from '../../service/store-failures.ts';

// Each adapter tells which of its driver's errors are outages when it loads (config/driver-outages.ts).
const loadAdapters = () =>
  Promise.all([
    import('../../readmodels/mongodb/mongodb-faults.ts'),
    import('../../eventstore/kurrentdb/kurrentdb-event-log.ts'),
  ]);

it("a driver's outage errors are told once its adapter has loaded", async () => {
  const mongo = new MongoNetworkError('x');
  const kurrent = new UnavailableError(new Error('x') as never);
  assert.equal(isStoreUnavailable(mongo), false, 'no adapter loaded: nothing can have thrown it');
  await loadAdapters();
  assert.equal(isStoreUnavailable(mongo), true);
  assert.equal(isStoreUnavailable(kurrent), true);
  assert.equal(isStoreUnavailable(new EventLogUnavailableError('KurrentDB at x does not answer')), true);
});

it("pg's connection failures are outages once a PostgreSQL adapter has loaded; its other errors are not", async () => {
  const { DatabaseError } = (await import('pg')).default;
  const withCode = (code: string) => Object.assign(new DatabaseError('x', 0, 'error'), { code });
  const outages = ['57P01', '57P02', '57P03', '08006', '08001', '08003', '53300'].map(withCode);
  assert.equal(isStoreUnavailable(outages[0]), false, 'no adapter loaded: nothing can have thrown it');
  await import('../../eventstore/postgres/pg-outages.ts');
  for (const error of outages) assert.equal(isStoreUnavailable(error), true, error.code);
  // A unique violation, a missing table, a refused password: bugs or settings, not outages.
  for (const code of ['23505', '42P01', '28P01', '3D000'])
    assert.equal(isStoreUnavailable(withCode(code)), false, code);
});

it('a locked SQLite file, a Mongo network failure and a refused connection are outages', async () => {
  await loadAdapters();
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-locked-'));
  try {
    const path = join(dir, 'db.sqlite');
    const holder = new DatabaseSync(path);
    holder.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)');
    const other = new DatabaseSync(path, { timeout: 0 });
    let locked: unknown;
    try {
      other.exec('INSERT INTO t VALUES (2)');
    } catch (error) {
      locked = error;
    }
    assert.ok(locked, 'the second writer was refused');
    assert.equal(isStoreUnavailable(locked), true);
    holder.exec('ROLLBACK');
    other.close();
    holder.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(isStoreUnavailable(new MongoNetworkError('x')), true);
  assert.equal(
    isStoreUnavailable(new MongoServerSelectionError('x', { type: 'Unknown', servers: new Map() } as never)),
    true,
  );
  assert.equal(isStoreUnavailable(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })), true);
});

it('an error whose message only reads like an outage is not one', () => {
  for (const message of [
    'database is locked',
    'SQLITE_BUSY',
    'connect ECONNREFUSED 127.0.0.1:27017',
    'MongoNetworkError',
    'disk I/O error',
  ]) {
    assert.equal(isStoreUnavailable(new Error(message)), false, message);
  }
  const constraint = (() => {
    const db = new DatabaseSync(':memory:');
    db.exec('CREATE TABLE t (x UNIQUE); INSERT INTO t VALUES (1)');
    try {
      db.exec('INSERT INTO t VALUES (1)');
    } catch (error) {
      return error;
    }
    return null;
  })();
  assert.equal(isStoreUnavailable(constraint), false, 'a constraint failure is a bug, not an outage');
  assert.equal(isStoreUnavailable('ECONNREFUSED'), false);
});
