/**
 * A replay's new generation (a `bulkBuild` store) has its commits written by a thread of their own
 * (readmodels/sqlite/build-writer.ts): the store's thread is free while a commit is written, its reads see
 * every commit asked for before them, a commit the thread fails rejects with the reason, and the file is
 * the one the store's own connection would have written. (The read-store and history contracts run
 * against such a store too.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { DocWrite } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';

const DOCS = 20_000;

const docs = (from: number, count: number, version: number): DocWrite[] =>
  Array.from({ length: count }, (_, i) => ({
    id: `d-${from + i}`,
    doc: { id: `d-${from + i}`, version, text: 'x'.repeat(200) },
    state: { n: i },
    seq: version,
    writtenAt: '2026-11-20T09:30:00.000Z',
    sortKey: `k-${String(from + i).padStart(6, '0')}`,
    facet: i % 2 === 0 ? 'even' : 'odd',
    keys: { handle: [`h-${from + i}`] },
  }));

describe('a build store’s writer thread', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-build-writer-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves the store’s thread free while a commit is written, and reads see the commits asked for before them', async () => {
    const store = createSqliteReadStore(join(dir, 'free.sqlite'), { bulkBuild: true });
    try {
      let turns = 0;
      const timer = setInterval(() => turns++, 1);
      const committed = store.commit('c', docs(0, DOCS, 1), 1);
      // Asked for at once, without awaiting the commit: each waits until it is written.
      const [checkpoint, total, one] = await Promise.all([
        store.checkpoint('c'),
        store.count('c'),
        store.get('c', `d-${DOCS - 1}`),
      ]);
      assert.deepEqual(await committed, { ok: true });
      clearInterval(timer);
      assert.ok(turns > 0, 'timers ran while the commit was written');
      assert.equal(checkpoint, 1);
      assert.equal(total, DOCS);
      assert.equal(one?.facet, 'odd');
    } finally {
      await store.close();
    }
  });

  it('writes the file the store’s own connection writes', async () => {
    const paths = [join(dir, 'inline.sqlite'), join(dir, 'built.sqlite')];
    const dumps: unknown[] = [];
    for (const [i, path] of paths.entries()) {
      const store = createSqliteReadStore(path, i === 0 ? {} : { bulkBuild: true });
      try {
        await store.commit('c', docs(0, 3000, 1), 1, 0);
        await store.commit('c', docs(1000, 3000, 2), 2, 1);
        dumps.push({
          page: (await store.list('c', { offset: 0, limit: 5000 })).docs.map((d) => [d.id, d.json, d.seq, d.facet]),
          keys: await store.findIds('c', 'handle', 'h-3999', 5),
          even: await store.count('c', ['even']),
        });
      } finally {
        await store.close();
      }
    }
    assert.deepEqual(dumps[1], dumps[0]);
  });

  it('rejects a commit its thread fails, with the reason, and writes the next one', async () => {
    const store = createSqliteReadStore(join(dir, 'failing.sqlite'), { bulkBuild: true });
    try {
      // A row SQLite refuses (written_at NOT NULL), found by the writer's thread, not while the rows are made.
      const refused = { ...docs(0, 1, 1)[0]!, writtenAt: null as unknown as string };
      await assert.rejects(store.commit('c', [refused], 1), /NOT NULL/);
      assert.deepEqual(await store.commit('c', docs(0, 10, 2), 2), { ok: true });
      assert.equal(await store.count('c'), 10);
      assert.equal(await store.checkpoint('c'), 2);
    } finally {
      await store.close();
    }
  });

  const version = (seq: number, writtenAt: string | null = '2026-11-20T09:30:00.000Z') => ({
    seq,
    writtenAt: writtenAt as string,
    sortKey: 'k',
    facet: 'even',
    doc: { id: 'd-0', seq },
  });

  it('fails the commit whose staged versions its thread could not write, and writes the next one', async () => {
    const store = createSqliteReadStore(join(dir, 'staged-failing.sqlite'), { bulkBuild: true });
    try {
      // More rows than one multi-row insert takes: the thread meets the refused row while staging, not at the commit.
      const unwritable = Array.from({ length: 40 }, (_, i) => ({
        id: `d-${i}`,
        version: version(1, null),
        validTo: 2,
      }));
      store.stageVersions!('c', unwritable);
      await assert.rejects(store.commit('c', docs(0, 1, 2), 2, 0), /NOT NULL/);
      assert.equal(await store.checkpoint('c'), 0);
      store.stageVersions!('c', [{ id: 'd-0', version: version(1), validTo: 2 }]);
      const last = { ...docs(0, 1, 2)[0]!, versions: [version(2)] };
      assert.deepEqual(await store.commit('c', [last], 2, 0), { ok: true });
      const versions = await store.history!.changes('c', { from: 0, to: 1, limit: 10 });
      assert.deepEqual(
        versions.map((v) => v.after.seq),
        [1],
      );
    } finally {
      await store.close();
    }
  });

  it('fails a commit refused after its versions were staged (a build has one writer)', async () => {
    const store = createSqliteReadStore(join(dir, 'staged-refused.sqlite'), { bulkBuild: true });
    try {
      store.stageVersions!('c', [{ id: 'd-0', version: version(1), validTo: 2 }]);
      await assert.rejects(store.commit('c', docs(0, 1, 2), 2, 5), /refused after its versions were staged/);
    } finally {
      await store.close();
    }
  });
});
