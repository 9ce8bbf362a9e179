/** The WAL-index header watch: one pread says whether any connection has committed since the mark. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { afterEach, it } from 'vitest';
import { openSqlite } from '../../config/sqlite.ts';
import { watchWalHeader, type WalHeaderWatch } from '../../readmodels/sqlite/wal-header.ts';

const dirs: string[] = [];
const databases: DatabaseSync[] = [];
const watches: WalHeaderWatch[] = [];
afterEach(() => {
  for (const watch of watches.splice(0)) watch.close();
  for (const db of databases.splice(0)) db.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function walDatabase() {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-wal-header-'));
  dirs.push(dir);
  const path = join(dir, 'read.sqlite');
  const writer = openSqlite(path);
  const reader = openSqlite(path);
  databases.push(writer, reader);
  writer.exec('CREATE TABLE t (n INTEGER)');
  const watch = watchWalHeader(path);
  watches.push(watch);
  return { writer, reader, watch };
}

it('is unchanged after a mark until a connection commits, and again after the next mark', () => {
  const { writer, watch } = walDatabase();
  assert.equal(watch.unchanged(), false, 'nothing marked yet');
  watch.mark();
  assert.equal(watch.unchanged(), true);
  assert.equal(watch.unchanged(), true, 'a look does not move the mark');
  writer.exec('INSERT INTO t VALUES (1)');
  assert.equal(watch.unchanged(), false);
  assert.equal(watch.unchanged(), false, 'still changed until marked again');
  watch.mark();
  assert.equal(watch.unchanged(), true);
});

it('sees every commit, also one after the WAL was checkpointed and restarted (new salts, frame count back at the start)', () => {
  const { writer, watch } = walDatabase();
  for (let n = 0; n < 5; n++) {
    watch.mark();
    if (n % 2 === 1) writer.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    writer.exec(`INSERT INTO t VALUES (${n})`);
    assert.equal(watch.unchanged(), false, `commit ${n}`);
  }
});

it("is not moved by another connection's reads", () => {
  const { writer, reader, watch } = walDatabase();
  writer.exec('INSERT INTO t VALUES (1)');
  watch.mark();
  for (let n = 0; n < 3; n++) reader.prepare('SELECT COUNT(*) AS n FROM t').get();
  assert.equal(watch.unchanged(), true);
});

it('answers "changed" always where there is no WAL index (in memory, or a file without one)', () => {
  const memory = watchWalHeader(':memory:');
  watches.push(memory);
  memory.mark();
  assert.equal(memory.unchanged(), false);
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-wal-header-'));
  dirs.push(dir);
  const missing = watchWalHeader(join(dir, 'never-opened.sqlite'));
  watches.push(missing);
  missing.mark();
  assert.equal(missing.unchanged(), false);
});
