import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectionRunner, createProjectorRunner } from '../../projectors/runner.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { createSupervisor } from '../../service/background.ts';
import { storageFaultOf } from '../../config/storage-fault.ts';
import { createHealth } from '../../service/health.ts';
import { runCli } from '../support/cli.ts';
import { dumpReadModels, firstDifference } from '../support/seed.ts';
import { skipFor } from '../support/skip.ts';

/**
 * A real full disk: a small tmpfs mounted for the test (root only), filled by ingest and by the
 * projectors' read store, then given room. Elsewhere these tests skip and say why.
 */
const SAMPLE = join(import.meta.dirname, '../../sample/sample.ndjson');

function mountTmpfs(dir: string, size: string): string | null {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    return null;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return stderr || (error instanceof Error ? error.message : String(error));
  }
}

const resize = (dir: string, size: string) => {
  execFileSync('mount', ['-o', `remount,size=${size}`, dir], { stdio: 'pipe' });
};

/** Whether this machine lets the test mount a tmpfs (root, or a container allowed to mount). */
function mountProblem(): string | false {
  const probe = mkdtempSync(join(tmpdir(), 'pb-tmpfs-probe-'));
  try {
    const problem = mountTmpfs(probe, '64k');
    if (problem !== null) return `cannot mount a small tmpfs to fill (${problem}); needs root or CAP_SYS_ADMIN`;
    execFileSync('umount', [probe]);
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

const problem = mountProblem();

/** Every stored event but its recording time, in log order. */
function eventRows(file: string): unknown[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    assert.equal((db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check, 'ok');
    const columns = 'position, id, stream, revision, type, data, metadata';
    return db.prepare(`SELECT ${columns} FROM events ORDER BY position`).all();
  } finally {
    db.close();
  }
}

describe('a full disk (a small tmpfs)', skipFor(problem), () => {
  let work = '';
  let reference = '';
  const mounted: string[] = [];

  /** A tmpfs of `size` in a new directory; unmounted after the suite. */
  function smallDisk(name: string, size: string): string {
    const dir = join(work, name);
    execFileSync('mkdir', ['-p', dir]);
    const failed = mountTmpfs(dir, size);
    if (failed !== null) throw new Error(`mount: ${failed}`);
    mounted.push(dir);
    return dir;
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'pb-full-disk-'));
    reference = join(work, 'reference');
    // What the sample is once stored on a disk with room: the log every other run must end up equal to.
    const result = await runCli(['ingest', SAMPLE], { env: { PULSEBOARD_DATA_DIR: reference } });
    assert.equal(result.code, 0, result.stderr);
  });

  afterAll(() => {
    for (const dir of mounted) execFileSync('umount', ['-l', dir]);
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  it('ingest names the full disk, keeps every batch before it, and a rerun stores the rest exactly once', async () => {
    const data = smallDisk('ingest', '3m');
    const env = { PULSEBOARD_DATA_DIR: data };
    const full = await runCli(['ingest', '--batch-size', '500', SAMPLE], { env });
    assert.equal(full.code, 1, full.stderr);
    assert.match(full.stderr, /event log failed: disk full: \S+events\.sqlite \(SQLite: database or disk is full\)/);
    assert.doesNotMatch(full.stderr, /rollback|no transaction/i);
    const accepted = Number(/^accepted (\d+), duplicate 0, rejected 0$/m.exec(full.stdout)?.[1]);
    assert.ok(accepted > 0 && accepted < 9955, full.stdout);
    const cost = `nothing from \\S+sample\\.ndjson:${accepted + 1} on was stored, every batch before it was`;
    assert.match(full.stderr, new RegExp(cost));

    // What was stored is intact and is exactly the reference log's first events.
    const kept = eventRows(join(data, 'events.sqlite'));
    const all = eventRows(join(reference, 'events.sqlite'));
    assert.ok(kept.length > 0);
    assert.deepEqual(kept, all.slice(0, kept.length));

    resize(data, '64m');
    const rest = await runCli(['ingest', '--batch-size', '500', SAMPLE], { env });
    assert.equal(rest.code, 0, rest.stderr);
    assert.equal(rest.stdout.trim(), `accepted ${9955 - accepted}, duplicate ${accepted}, rejected 0`);
    assert.deepEqual(eventRows(join(data, 'events.sqlite')), all);
  });

  it('a replay’s generation, written by its own thread, names the full disk once', async () => {
    const doc = (i: number) => ({ id: `d-${i}`, text: 'x'.repeat(400) });
    const rows = Array.from({ length: 5000 }, (_, i) => ({
      id: `d-${i}`,
      doc: doc(i),
      state: {},
      seq: 1,
      writtenAt: '2026-11-20T09:30:00.000Z',
      sortKey: `k-${i}`,
      facet: 'all',
      keys: {},
    }));
    // The commit's own rows, then history versions staged before a commit: both written by the thread.
    const attempts = {
      rows: (store: ReadStore) => store.commit('c', rows, 1),
      staged: (store: ReadStore) => {
        const version = (i: number) => ({
          seq: 1,
          writtenAt: rows[i]!.writtenAt,
          sortKey: `k-${i}`,
          facet: 'all',
          doc: doc(i),
        });
        store.stageVersions!(
          'c',
          Array.from({ length: 5000 }, (_, i) => ({ id: `d-${i}`, version: version(i), validTo: 2 })),
        );
        return store.commit('c', rows.slice(0, 1), 2, 0);
      },
    };
    for (const [name, attempt] of Object.entries(attempts)) {
      const file = join(smallDisk(`build-${name}`, '1m'), 'readmodels-1.sqlite');
      const store = createSqliteReadStore(file, { bulkBuild: true });
      try {
        const failure = await attempt(store).then(
          () => assert.fail(`${name}: the commit fitted a 1 MiB disk`),
          (error: unknown) => error,
        );
        assert.equal(storageFaultOf(failure), 'disk_full', `${name}: ${String(failure)}`);
        const message = failure instanceof Error ? failure.message : String(failure);
        assert.equal(message, `disk full: ${file} (SQLite: database or disk is full)`, name);
      } finally {
        await store.close().catch(() => undefined);
      }
    }
  });

  it('the projectors log and report disk_full, keep what they committed, and catch up once there is room', async () => {
    const disk = smallDisk('read-models', '1m');
    const log = createSqliteEventLog(join(reference, 'events.sqlite'));
    const store = createSqliteReadStore(join(disk, 'read.sqlite'));
    const lines: Record<string, unknown>[] = [];
    const logger = { info() {}, warn: (fields: Record<string, unknown>) => void lines.push(fields) };
    const stop = new AbortController();
    const backoff = { baseMs: 20, capMs: 100, recoveredAfterMs: 300 };
    const supervisor = createSupervisor({ signal: stop.signal, logger, backoff });
    const collections = projectors.map((p) => p.collection);
    const health = createHealth({ log, store, collections, background: supervisor.status });
    const runner = createProjectionRunner(log, store, projectors, { batchSize: 1000, idleWaitMs: 20 });
    const running = supervisor.supervise('projectors', (signal) => runner.run(signal));
    try {
      for (let attempt = 0; ; attempt++) {
        assert.ok(attempt < 600, 'the projectors never reported the full disk');
        const readiness = await health.ready();
        if (readiness.reasons.includes('projectors: disk_full')) {
          assert.equal(readiness.status, 'degraded');
          assert.equal(readiness.ready, true, 'what was committed is still served');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const named = (f: Record<string, unknown>) =>
        f['reason'] === 'disk_full' && f['errorCode'] === 'STORAGE_DISK_FULL';
      assert.ok(
        lines.some((f) => f['loop'] === 'projectors' && named(f)),
        JSON.stringify(lines),
      );
      const head = await log.headPosition();
      const committed = await Promise.all(projectors.map(async (p) => store.checkpoint(p.collection)));
      assert.ok(
        committed.some((c) => c < head),
        'the disk filled before the projectors reached the head',
      );

      resize(disk, '64m');
      for (let attempt = 0; ; attempt++) {
        assert.ok(attempt < 600, 'the projectors never caught up once there was room');
        const readiness = await health.ready();
        if (readiness.status === 'ready' && Object.values(readiness.lag).every((lag) => lag === 0)) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.deepEqual((await health.ready()).reasons, []);
    } finally {
      stop.abort();
      await running;
    }
    // Nothing lost or applied twice: the same documents as a projection made on a disk with room.
    const clean = createSqliteReadStore(join(work, 'clean.sqlite'));
    for (const p of projectors) await createProjectorRunner(log, clean, p).catchUp();
    assert.equal(firstDifference(await dumpReadModels(store), await dumpReadModels(clean)), null);
    await clean.close();
    await store.close();
    await log.close();
  });
});
