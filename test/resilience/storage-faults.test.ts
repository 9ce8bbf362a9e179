import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { MongoBulkWriteError, MongoServerError, MongoWriteConcernError } from 'mongodb';
import { afterEach, describe, it } from 'vitest';
import { inReadTransaction, inTransaction, openSqlite } from '../../config/sqlite.ts';
import { StorageFaultError, storageFaultOf } from '../../config/storage-fault.ts';
import { EventLogUnavailableError } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { namedMongoError } from '../../readmodels/mongodb/mongodb-faults.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { createSupervisor, DEFAULT_BACKOFF } from '../../service/background.ts';
import { createHealth } from '../../service/health.ts';
import { manualClock, stateLog } from './support.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A SQLite file whose connection may grow to `pages` pages only: past that SQLite answers SQLITE_FULL
 * and rolls the transaction back by itself, exactly as on a full disk (proven on a real one in
 * full-disk.test.ts).
 */
function cappedDatabase(): { db: DatabaseSync; file: string; cap(): void; uncap(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'pb-faults-'));
  dirs.push(dir);
  const file = join(dir, 'capped.sqlite');
  const db = openSqlite(file);
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  db.exec(`INSERT INTO t (v) VALUES ('kept')`);
  const pages = () => (db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count;
  return {
    db,
    file,
    cap: () => db.exec(`PRAGMA max_page_count = ${pages()}`),
    uncap: () => db.exec('PRAGMA max_page_count = 1073741823'),
  };
}

const fill = (db: DatabaseSync) => {
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  for (let i = 0; i < 10_000; i++) insert.run('x'.repeat(2000));
};

describe('SQLite transactions on a full disk', () => {
  it('report the full disk (SQLITE_FULL), not the failed ROLLBACK after SQLite already rolled back', () => {
    const { db, file, cap, uncap } = cappedDatabase();
    cap();
    let caught: unknown;
    try {
      inTransaction(db, () => fill(db));
    } catch (error) {
      caught = error;
    }
    assert.ok(caught instanceof StorageFaultError, `got ${String(caught)}`);
    assert.equal(caught.kind, 'disk_full');
    assert.equal(caught.code, 'STORAGE_DISK_FULL');
    assert.equal(caught.message, `disk full: ${file} (SQLite: database or disk is full)`);
    assert.equal((caught.cause as { errcode?: number }).errcode, 13);
    assert.doesNotMatch(caught.message, /rollback/);

    // Nothing stored was altered, and the connection takes the next transaction once there is room.
    assert.equal(db.isTransaction, false);
    assert.deepEqual(
      db
        .prepare('SELECT v FROM t')
        .all()
        .map((row) => row['v']),
      ['kept'],
    );
    uncap();
    inTransaction(db, () => db.prepare(`INSERT INTO t (v) VALUES ('later')`).run());
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n, 2);
    db.close();
  });

  it('roll back and rethrow any other failure unchanged, the same error object', () => {
    const { db } = cappedDatabase();
    const own = new TypeError('not a storage fault');
    assert.throws(
      () =>
        inTransaction(db, () => {
          db.prepare(`INSERT INTO t (v) VALUES ('rolled back')`).run();
          throw own;
        }),
      (error) => error === own,
    );
    assert.equal(db.isTransaction, false);
    // A constraint failure is the store's answer, not a fault: unchanged too (the event log relies on its errcode).
    assert.throws(
      () => inTransaction(db, () => db.prepare('INSERT INTO t (id, v) VALUES (1, ?)').run('dup')),
      (error: { errcode?: number }) => !(error instanceof StorageFaultError) && (error.errcode! & 0xff) === 19,
    );
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n, 1);
    const read = new RangeError('read failed');
    assert.throws(
      () =>
        inReadTransaction(db, () => {
          throw read;
        }),
      (error) => error === read,
    );
    assert.equal(db.isTransaction, false);
    db.close();
  });
});

describe('background loops and /readyz name the cause', () => {
  it('the retry log line and the loop status carry disk_full; /readyz lists it among its reasons', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pb-faults-'));
    dirs.push(dir);
    const log = createSqliteEventLog(join(dir, 'events.sqlite'));
    const store = createSqliteReadStore(join(dir, 'read.sqlite'));
    const { db, cap } = cappedDatabase();
    cap();
    const manual = manualClock();
    const states = stateLog();
    const lines: { fields: Record<string, unknown>; message: string }[] = [];
    const logger = {
      info() {},
      warn: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }),
    };
    const stop = new AbortController();
    const supervisor = createSupervisor({
      signal: stop.signal,
      clock: manual.clock,
      logger,
      random: () => 0.5,
      onChange: states.onChange,
    });
    let attempts = 0;
    const loop = async () => {
      attempts += 1;
      // First the event log does not answer, then the store's disk fills: each cause is logged once.
      if (attempts <= 2) {
        throw new EventLogUnavailableError('KurrentDB at kurrentdb://SECRET-HOST:2113 does not answer');
      }
      inTransaction(db, () => fill(db));
    };
    const supervised = supervisor.supervise('projector:projects', loop);
    await states.until('projector:projects', 'retrying');
    assert.equal(supervisor.status()['projector:projects']!.reason, 'unavailable');
    for (let i = 0; i < 3; i++) {
      manual.advance(DEFAULT_BACKOFF.capMs);
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.ok(attempts >= 3);
    const status = supervisor.status()['projector:projects']!;
    assert.equal(status.state, 'retrying');
    assert.equal(status.reason, 'disk_full');

    assert.deepEqual(
      lines.map((line) => line.fields),
      [
        { loop: 'projector:projects', reason: 'unavailable', errorName: 'EventLogUnavailableError' },
        {
          loop: 'projector:projects',
          reason: 'disk_full',
          errorName: 'StorageFaultError',
          errorCode: 'STORAGE_DISK_FULL',
        },
      ],
    );
    assert.doesNotMatch(JSON.stringify(lines), /SECRET|capped\.sqlite/);

    const health = createHealth({ log, store, collections: ['projects'], background: supervisor.status });
    const readiness = await health.ready();
    assert.equal(readiness.status, 'degraded');
    assert.deepEqual(readiness.reasons, ['projector:projects: disk_full']);
    stop.abort();
    await supervised;
    assert.deepEqual((await health.ready()).reasons, []);
    db.close();
    await log.close();
    await store.close();
  });
});

describe('MongoDB errors are named by their codes', () => {
  it('OutOfDiskSpace, in a server error or a bulk write error, is a full disk', () => {
    const server = new MongoServerError({ message: 'anything at all', code: 14031, codeName: 'OutOfDiskSpace' });
    const named = namedMongoError(server);
    assert.ok(named instanceof StorageFaultError);
    assert.equal(named.kind, 'disk_full');
    assert.equal(named.cause, server);
    assert.equal(named.message, 'disk full: MongoDB read store refused the write (OutOfDiskSpace)');

    // A bulk write's own code may be another one: the per-document write errors are looked at too.
    const writeError = { code: 14031, index: 0, errmsg: 'anything' };
    const bulkError = { message: 'write failed', code: 65, writeErrors: [writeError] };
    const bulk = new MongoBulkWriteError(bulkError as never, {} as never);
    assert.equal(storageFaultOf(namedMongoError(bulk)), 'disk_full');
  });

  it('an unconfirmed write concern is typed; text that merely mentions a full disk is not', () => {
    const concern = new MongoWriteConcernError({
      writeConcernError: { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out' },
      ok: 1,
    });
    assert.equal(storageFaultOf(namedMongoError(concern)), 'write_unconfirmed');
    const text = new MongoServerError({ message: 'No space left on device; disk full', code: 2, codeName: 'BadValue' });
    assert.equal(namedMongoError(text), text);
    const plain = new Error('disk full');
    assert.equal(namedMongoError(plain), plain);
  });
});
