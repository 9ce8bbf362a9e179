import { inTransaction, openSqlite } from '../../config/sqlite.ts';
import type { CommitOutcome, DeltaQuery, KeysetQuery, ListQuery, ReadStore, StoredDoc } from '../port.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS docs (
  collection TEXT NOT NULL,
  id TEXT NOT NULL,
  doc TEXT NOT NULL,
  state TEXT NOT NULL,
  seq INTEGER NOT NULL,
  written_at TEXT NOT NULL,
  sort_key TEXT NOT NULL,
  facet TEXT NOT NULL,
  keys TEXT NOT NULL,
  PRIMARY KEY (collection, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS docs_listing ON docs (collection, sort_key DESC, id DESC, facet);
CREATE INDEX IF NOT EXISTS docs_listing_facet ON docs (collection, facet, sort_key DESC, id DESC);
CREATE INDEX IF NOT EXISTS docs_delta ON docs (collection, seq, id);
CREATE INDEX IF NOT EXISTS docs_written ON docs (collection, written_at, seq);
CREATE TABLE IF NOT EXISTS doc_keys (
  collection TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  id TEXT NOT NULL,
  PRIMARY KEY (collection, key, value, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_keys_by_id ON doc_keys (collection, id);
CREATE TABLE IF NOT EXISTS checkpoints (collection TEXT PRIMARY KEY, position INTEGER NOT NULL);
`;

type DocRow = {
  id: string;
  doc: string;
  state: string;
  seq: number;
  written_at: string;
  sort_key: string;
  facet: string;
  keys: string;
};

/** `doc`, `state` and `keys` are parsed on first access: read paths that splice `json` parse nothing. */
function toStored<D, S>(row: DocRow): StoredDoc<D, S> {
  let doc: { value: D } | undefined;
  let state: { value: S } | undefined;
  let keys: Record<string, string[]> | undefined;
  return {
    id: row.id,
    get doc() {
      doc ??= { value: JSON.parse(row.doc) as D };
      return doc.value;
    },
    json: row.doc,
    get state() {
      state ??= { value: JSON.parse(row.state) as S };
      return state.value;
    },
    seq: row.seq,
    writtenAt: row.written_at,
    sortKey: row.sort_key,
    facet: row.facet,
    get keys() {
      keys ??= JSON.parse(row.keys) as Record<string, string[]>;
      return keys;
    },
  };
}

/** Appends the facet values to params and returns the SQL condition ('' when unfiltered). */
function facetFilter(facets: readonly string[] | undefined, params: (string | number)[], joiner = 'AND '): string {
  if (facets === undefined) return '';
  if (facets.length === 0) return `${joiner}0`;
  params.push(...facets);
  return `${joiner}facet IN (${facets.map(() => '?').join(',')})`;
}

/** The embedded read store: one SQLite file holding every collection. */
export function createSqliteReadStore(path: string): ReadStore {
  const db = openSqlite(path);
  db.exec(SCHEMA);

  const upsert = db.prepare(`
    INSERT INTO docs (collection, id, doc, state, seq, written_at, sort_key, facet, keys)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (collection, id) DO UPDATE SET doc = excluded.doc, state = excluded.state, seq = excluded.seq,
      written_at = excluded.written_at, sort_key = excluded.sort_key, facet = excluded.facet, keys = excluded.keys`);
  const deleteKeys = db.prepare('DELETE FROM doc_keys WHERE collection = ? AND id = ?');
  const insertKey = db.prepare('INSERT OR IGNORE INTO doc_keys (collection, key, value, id) VALUES (?, ?, ?, ?)');
  const selectKeys = db.prepare('SELECT keys FROM docs WHERE collection = ? AND id = ?');
  const setCheckpoint = db.prepare(
    'INSERT INTO checkpoints (collection, position) VALUES (?, ?) ON CONFLICT (collection) DO UPDATE SET position = excluded.position',
  );
  const getCheckpoint = db.prepare('SELECT position FROM checkpoints WHERE collection = ?');
  const getOne = db.prepare('SELECT * FROM docs WHERE collection = ? AND id = ?');

  return {
    async checkpoint(collection) {
      const row = getCheckpoint.get(collection) as { position: number } | undefined;
      return row?.position ?? 0;
    },

    async commit(collection, writes, checkpoint, expected) {
      return inTransaction(db, (): CommitOutcome => {
        if (expected !== undefined) {
          const actual = (getCheckpoint.get(collection) as { position: number } | undefined)?.position ?? 0;
          if (actual !== expected) return { ok: false, reason: 'checkpoint_moved', actual };
        }
        for (const w of writes) {
          const keysJson = JSON.stringify(w.keys);
          const previous = selectKeys.get(collection, w.id) as { keys: string } | undefined;
          upsert.run(collection, w.id, w.json ?? JSON.stringify(w.doc), JSON.stringify(w.state), w.seq, w.writtenAt, w.sortKey, w.facet, keysJson);
          if (previous?.keys === keysJson) continue;
          deleteKeys.run(collection, w.id);
          for (const [key, values] of Object.entries(w.keys)) {
            for (const value of values) insertKey.run(collection, key, value, w.id);
          }
        }
        setCheckpoint.run(collection, checkpoint);
        return { ok: true };
      });
    },

    async get<D, S>(collection: string, id: string) {
      const row = getOne.get(collection, id) as DocRow | undefined;
      return row ? toStored<D, S>(row) : null;
    },

    async getMany<D, S>(collection: string, ids: readonly string[]) {
      const found = new Map<string, StoredDoc<D, S>>();
      const chunk = 500;
      for (let i = 0; i < ids.length; i += chunk) {
        const part = ids.slice(i, i + chunk);
        const rows = db
          .prepare(`SELECT * FROM docs WHERE collection = ? AND id IN (${part.map(() => '?').join(',')})`)
          .all(collection, ...part) as DocRow[];
        for (const row of rows) found.set(row.id, toStored<D, S>(row));
      }
      return found;
    },

    async findIds(collection, key, value, limit) {
      const rows = db
        .prepare('SELECT id FROM doc_keys WHERE collection = ? AND key = ? AND value = ? ORDER BY id LIMIT ?')
        .all(collection, key, value, limit) as { id: string }[];
      return rows.map((r) => r.id);
    },

    async list<D>(collection: string, query: ListQuery) {
      const params: (string | number)[] = [collection];
      const facetClause = facetFilter(query.facets, params);
      params.push(query.limit, query.offset);
      // Offsets are skipped in the covering listing index; only the page's own rows are read.
      const rows = db
        .prepare(
          `SELECT docs.* FROM (SELECT id FROM docs WHERE collection = ? ${facetClause} ORDER BY sort_key DESC, id DESC LIMIT ? OFFSET ?) AS page
           CROSS JOIN docs ON docs.collection = ? AND docs.id = page.id ORDER BY docs.sort_key DESC, docs.id DESC`,
        )
        .all(...params, collection) as DocRow[];
      return rows.map((r) => toStored<D, unknown>(r));
    },

    async count(collection, facets) {
      const params: (string | number)[] = [collection];
      const facetClause = facetFilter(facets, params);
      const row = db.prepare(`SELECT COUNT(*) AS n FROM docs WHERE collection = ? ${facetClause}`).get(...params) as { n: number };
      return row.n;
    },

    async listKeyset<D>(collection: string, query: KeysetQuery) {
      const params: (string | number)[] = [collection];
      const clauses = ['collection = ?', facetFilter(query.facets, params, '')].filter(Boolean);
      if (query.before) {
        clauses.push('(sort_key < ? OR (sort_key = ? AND id < ?))');
        params.push(query.before.sortKey, query.before.sortKey, query.before.id);
      }
      params.push(query.limit);
      const rows = db
        .prepare(`SELECT * FROM docs WHERE ${clauses.join(' AND ')} ORDER BY sort_key DESC, id DESC LIMIT ?`)
        .all(...params) as DocRow[];
      return rows.map((r) => toStored<D, unknown>(r));
    },

    async delta<D>(collection: string, query: DeltaQuery) {
      const clauses = ['collection = ?', 'seq <= ?'];
      const params: (string | number)[] = [collection, query.upToSeq];
      if ('after' in query.start) {
        clauses.push('(seq > ? OR (seq = ? AND id > ?))');
        params.push(query.start.after.seq, query.start.after.seq, query.start.after.id);
      } else {
        // writtenAt never decreases with seq (both come from the log), so a time maps to a first seq
        // and the walk can use the (seq, id) index instead of sorting every later row.
        const first = db
          .prepare('SELECT seq FROM docs WHERE collection = ? AND written_at >= ? ORDER BY written_at, seq LIMIT 1')
          .get(collection, query.start.fromWrittenAt) as { seq: number } | undefined;
        if (!first) return [];
        clauses.push('seq >= ?');
        params.push(first.seq);
      }
      const facetClause = facetFilter(query.facets, params, '');
      if (facetClause) clauses.push(facetClause);
      params.push(query.limit);
      const rows = db
        .prepare(`SELECT * FROM docs WHERE ${clauses.join(' AND ')} ORDER BY seq, id LIMIT ?`)
        .all(...params) as DocRow[];
      return rows.map((r) => toStored<D, unknown>(r));
    },

    async clear() {
      inTransaction(db, () => {
        db.exec('DELETE FROM docs; DELETE FROM doc_keys; DELETE FROM checkpoints;');
      });
    },

    async close() {
      db.close();
    },
  };
}
