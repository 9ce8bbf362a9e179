/**
 * The SQLite history keeps a version's shared member apart, once per change of it (readmodels/sqlite/
 * sqlite-history.ts): what it stores, and a file whose versions were stored whole before that.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, it } from 'vitest';
import { PROJECT_FACETS, PROJECTS_COLLECTION as C } from '../../projectors/projects.ts';
import { SHARED_TEXT_MIN } from '../../readmodels/history/shared-member.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { written } from '../contract/history.contract.ts';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pulseboard-shared-texts-'));
  path = join(dir, 'readmodels.sqlite');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const at = (seq: number, doc: unknown) => ({
  seq,
  sortKey: 'k',
  facet: PROJECT_FACETS.dossier,
  doc,
  sharedMember: 'dossier',
});
const dossier = (tag: string) => ({ tag, text: 'x'.repeat(SHARED_TEXT_MIN) });
const rows = (sql: string) => {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
};

it('a member left as it was is stored once, across versions and commits; a changed one again', async () => {
  const store = createSqliteReadStore(path);
  const kept = dossier('a');
  await store.commit(
    C,
    [
      written('p1', [
        at(1, { id: 'p1', fol: 1, dossier: kept }),
        at(2, { id: 'p1', fol: 2, dossier: kept }),
        at(3, { id: 'p1', fol: 3, dossier: dossier('a') }),
      ]),
    ],
    3,
  );
  // The next commit meets the stored version: an equal text (a new object) still refers to its row.
  await store.commit(C, [written('p1', [at(4, { id: 'p1', fol: 4, dossier: dossier('a') })])], 4, 3);
  await store.commit(C, [written('p1', [at(5, { id: 'p1', fol: 5, dossier: dossier('b') })])], 5, 4);
  await store.close();
  assert.deepEqual(
    rows("SELECT json_extract(text, '$.tag') AS tag FROM history_shared_texts ORDER BY rowid").map((r) => r['tag']),
    ['a', 'b'],
  );
  const versions = rows('SELECT doc, shared_text FROM history_versions ORDER BY valid_from');
  assert.deepEqual(
    versions.map((v) => v['doc']),
    [1, 2, 3, 4, 5].map((fol) => `{"id":"p1","fol":${fol},"dossier":}`),
    'each version holds its own members, not the dossier',
  );
  assert.deepEqual(new Set(versions.slice(0, 4).map((v) => v['shared_text'])).size, 1);
});

it('a file whose versions were stored whole gets the columns on open, and compares its old versions whole', async () => {
  const first = createSqliteReadStore(path);
  await first.commit(C, [written('p1', [at(1, { id: 'p1', small: 1 })])], 1);
  await first.close();
  // The layout before shared texts: no columns, no table, and a version holding its large member.
  const old = { id: 'p2', dossier: dossier('whole') };
  const earlier = new DatabaseSync(path);
  earlier.exec(`DROP TABLE history_shared_texts;
    ALTER TABLE history_versions DROP COLUMN shared_text; ALTER TABLE history_versions DROP COLUMN shared_at;`);
  earlier
    .prepare(
      `INSERT INTO history_versions (collection, id, valid_from, valid_to, written_at, sort_key, facet, doc)
        VALUES (?, 'p2', 2, ${Number.MAX_SAFE_INTEGER}, '2026-11-01T00:00:02.000Z', 'k', 'dossier', ?)`,
    )
    .run(C, JSON.stringify(old));
  earlier.exec("INSERT INTO history_placements VALUES ('projects', 'k', 'p2', 2, 9007199254740991, 'dossier')");
  earlier.exec("UPDATE checkpoints SET position = 2 WHERE collection = 'projects'");
  earlier.close();

  const store = createSqliteReadStore(path);
  try {
    const same = { id: 'p2', dossier: dossier('whole') };
    const other = { id: 'p2', dossier: dossier('new') };
    await store.commit(C, [written('p2', [at(3, same), at(4, other)])], 4, 2);
    const history = store.history!;
    assert.equal((await history.get(C, 'p2', 2))?.json, JSON.stringify(old));
    assert.equal((await history.get(C, 'p2', 3))?.json, JSON.stringify(same));
    assert.equal((await history.get(C, 'p2', 4))?.json, JSON.stringify(other));
    const changed = async (from: number, to: number) =>
      (await history.changes(C, { from, to, limit: 10 })).map((r) => [r.before?.json, r.after.json]);
    assert.deepEqual(await changed(2, 3), [], 'the same text, stored whole and stored split');
    assert.deepEqual(await changed(2, 4), [[JSON.stringify(old), JSON.stringify(other)]]);
  } finally {
    await store.close();
  }
});
