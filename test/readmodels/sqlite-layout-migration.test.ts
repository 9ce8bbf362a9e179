/**
 * A read-model file written before counters and the rowid layout opens as a current store: documents,
 * keys and checkpoints kept, counts made once from what it holds, and later commits counted; one
 * with the history's unused time index loses it; a new file gets the larger pages, an older one keeps its own.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { it } from 'vitest';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';

const EARLIER_SCHEMA = `
CREATE TABLE docs (collection TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL, state TEXT NOT NULL, seq INTEGER NOT NULL,
  written_at TEXT NOT NULL, sort_key TEXT NOT NULL, facet TEXT NOT NULL, keys TEXT NOT NULL, PRIMARY KEY (collection, id)) WITHOUT ROWID;
CREATE INDEX docs_listing ON docs (collection, sort_key DESC, id DESC, facet);
CREATE INDEX docs_listing_facet ON docs (collection, facet, sort_key DESC, id DESC);
CREATE INDEX docs_delta ON docs (collection, seq, id);
CREATE INDEX docs_written ON docs (collection, written_at, seq);
CREATE TABLE doc_keys (collection TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (collection, key, value, id)) WITHOUT ROWID;
CREATE INDEX doc_keys_by_id ON doc_keys (collection, id);
CREATE TABLE checkpoints (collection TEXT PRIMARY KEY, position INTEGER NOT NULL);
`;

it('an earlier read-model file keeps its documents and gets exact counts', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-layout-'));
  const path = join(dir, 'readmodels.sqlite');
  try {
    const earlier = new DatabaseSync(path);
    earlier.exec(EARLIER_SCHEMA);
    const insert = earlier.prepare('INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
    for (let i = 0; i < 30; i++) {
      insert.run(
        'projects',
        `p${i}`,
        JSON.stringify({ id: `p${i}` }),
        JSON.stringify({ s: i }),
        i + 1,
        `2026-10-01T00:00:${String(i).padStart(2, '0')}.000Z`,
        `k${String(i % 10).padStart(2, '0')}`,
        i % 3 === 0 ? 'dossier' : 'no_dossier',
        JSON.stringify({ handle: [`h${i}`] }),
      );
    }
    earlier.exec(
      `INSERT INTO doc_keys SELECT 'projects', 'handle', 'h' || substr(id, 2), id FROM docs; INSERT INTO checkpoints VALUES ('projects', 30);`,
    );
    earlier.close();

    const store = createSqliteReadStore(path);
    assert.equal(await store.checkpoint('projects'), 30);
    assert.equal(await store.count('projects', ['dossier']), 10);
    assert.equal(await store.count('projects'), 30);
    assert.deepEqual((await store.get('projects', 'p7'))?.state, { s: 7 });
    assert.deepEqual(await store.findIds('projects', 'handle', 'h7', 10), ['p7']);
    const page = (await store.list('projects', { offset: 25, limit: 10 })).docs;
    assert.deepEqual(
      page.map((d) => d.id),
      ['p11', 'p1', 'p20', 'p10', 'p0'],
      'the last page, walked from the end',
    );
    await store.commit(
      'projects',
      [
        {
          id: 'p7',
          doc: { id: 'p7', v: 2 },
          state: {},
          seq: 31,
          writtenAt: '2026-10-02T00:00:00.000Z',
          sortKey: 'k07',
          facet: 'dossier',
          keys: { handle: ['h7'] },
        },
      ],
      31,
    );
    assert.equal(await store.count('projects', ['dossier']), 11);
    assert.equal(await store.count('projects', ['no_dossier']), 19);
    await store.close();

    const reopened = new DatabaseSync(path, { readOnly: true });
    const table = reopened.prepare("SELECT sql FROM sqlite_master WHERE name = 'docs'").get() as { sql: string };
    reopened.close();
    assert.doesNotMatch(table.sql, /WITHOUT ROWID/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it("a file with the history's time index loses it on open, and keeps its versions readable", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-layout-'));
  const path = join(dir, 'readmodels.sqlite');
  try {
    const first = createSqliteReadStore(path);
    const write = (seq: number, v: number) => ({
      id: 'p1',
      doc: { id: 'p1', v },
      state: {},
      seq,
      writtenAt: `2026-10-01T00:00:0${seq}.000Z`,
      sortKey: 'k01',
      facet: 'dossier',
      keys: {},
      versions: [
        { seq, writtenAt: `2026-10-01T00:00:0${seq}.000Z`, sortKey: 'k01', facet: 'dossier', doc: { id: 'p1', v } },
      ],
    });
    await first.commit('projects', [write(1, 1)], 1);
    await first.close();
    const earlier = new DatabaseSync(path);
    earlier.exec('CREATE INDEX history_versions_time ON history_versions (collection, written_at, valid_from)');
    earlier.close();

    const store = createSqliteReadStore(path);
    await store.commit('projects', [write(2, 2)], 2, 1);
    assert.deepEqual((await store.history!.get('projects', 'p1', 1))?.doc, { id: 'p1', v: 1 });
    assert.deepEqual((await store.history!.get('projects', 'p1', 2))?.doc, { id: 'p1', v: 2 });
    await store.close();
    const reopened = new DatabaseSync(path, { readOnly: true });
    const indexes = reopened
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'history_versions'")
      .all() as { name: string }[];
    reopened.close();
    assert.deepEqual(indexes.map((i) => i.name).sort(), [
      'history_versions_delta',
      'sqlite_autoindex_history_versions_1',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('a new read-model file gets the larger pages; a file made with smaller ones keeps them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-layout-'));
  const pageSize = (path: string) => {
    const db = new DatabaseSync(path, { readOnly: true });
    const size = (db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size;
    db.close();
    return size;
  };
  try {
    const fresh = join(dir, 'fresh.sqlite');
    await createSqliteReadStore(fresh).close();
    assert.equal(pageSize(fresh), 8192);
    const earlier = join(dir, 'earlier.sqlite');
    const old = new DatabaseSync(earlier);
    old.exec(
      'PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE checkpoints (collection TEXT PRIMARY KEY, position INTEGER NOT NULL);',
    );
    old.exec("INSERT INTO checkpoints VALUES ('projects', 7)");
    old.close();
    const store = createSqliteReadStore(earlier);
    assert.equal(await store.checkpoint('projects'), 7);
    await store.close();
    assert.equal(pageSize(earlier), 4096);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
