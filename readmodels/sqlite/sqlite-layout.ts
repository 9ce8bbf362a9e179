import type { DatabaseSync } from 'node:sqlite';
import { inTransaction } from '../../config/sqlite.ts';
import { ensureChunks } from './list-chunks.ts';
import { ensureHistory } from './sqlite-history.ts';

/**
 * Documents: a rowid table with the small columns first and the large texts last, so a listing reads
 * a row's attributes and its `doc` from one page without walking past `state`, and a page's rows are
 * fetched by rowid from the covering listing index. (Rows of a WITHOUT ROWID table this large spill
 * into overflow pages that every column read had to walk.)
 */
const DOCS_TABLE = (name: string) => `
CREATE TABLE IF NOT EXISTS ${name} (
  collection TEXT NOT NULL,
  id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  written_at TEXT NOT NULL,
  sort_key TEXT NOT NULL,
  facet TEXT NOT NULL,
  keys TEXT NOT NULL,
  doc TEXT NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (collection, id)
);`;
const COLUMNS = 'collection, id, seq, written_at, sort_key, facet, keys, doc, state';

const SCHEMA = `
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

/**
 * Documents per (collection, facet), kept by triggers in the transaction that writes the documents,
 * so a board total is one row read instead of a COUNT over the collection.
 */
const COUNTERS = `
CREATE TABLE IF NOT EXISTS doc_counts (
  collection TEXT NOT NULL,
  facet TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (collection, facet)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS docs_counted_on_insert AFTER INSERT ON docs BEGIN
  INSERT INTO doc_counts (collection, facet, n) VALUES (NEW.collection, NEW.facet, 1)
    ON CONFLICT (collection, facet) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS docs_counted_on_facet AFTER UPDATE OF facet ON docs WHEN OLD.facet IS NOT NEW.facet BEGIN
  UPDATE doc_counts SET n = n - 1 WHERE collection = OLD.collection AND facet = OLD.facet;
  INSERT INTO doc_counts (collection, facet, n) VALUES (NEW.collection, NEW.facet, 1)
    ON CONFLICT (collection, facet) DO UPDATE SET n = n + 1;
END;
`;

/**
 * Lookup keys, kept by triggers from each row's `keys` text: written when a document is inserted,
 * rewritten only when its keys change. An upsert that leaves the keys as they were (most writes)
 * touches no key row, and the commit loop makes no call per key.
 */
const KEY_TRIGGERS = `
DROP TRIGGER IF EXISTS docs_keys_replaced;
CREATE TRIGGER IF NOT EXISTS docs_keys_on_insert AFTER INSERT ON docs BEGIN
  INSERT OR IGNORE INTO doc_keys (collection, key, value, id)
    SELECT NEW.collection, k.key, v.value, NEW.id FROM json_each(NEW.keys) AS k, json_each(k.value) AS v;
END;
CREATE TRIGGER IF NOT EXISTS docs_keys_on_change AFTER UPDATE OF keys ON docs WHEN OLD.keys IS NOT NEW.keys BEGIN
  DELETE FROM doc_keys WHERE collection = OLD.collection AND id = OLD.id;
  INSERT OR IGNORE INTO doc_keys (collection, key, value, id)
    SELECT NEW.collection, k.key, v.value, NEW.id FROM json_each(NEW.keys) AS k, json_each(k.value) AS v;
END;
`;

/** Moves a store written with the earlier WITHOUT ROWID layout to the current one (once, on open). */
function migrateDocsLayout(db: DatabaseSync): void {
  inTransaction(db, () => {
    const table = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'docs'").get() as
      { sql: string } | undefined;
    if (!table) {
      db.exec(DOCS_TABLE('docs'));
      return;
    }
    if (!/WITHOUT ROWID/i.test(table.sql)) return;
    db.exec(`${DOCS_TABLE('docs_relaid')}
      INSERT INTO docs_relaid (${COLUMNS}) SELECT ${COLUMNS} FROM docs ORDER BY collection, sort_key, id;
      DROP TABLE docs;
      ALTER TABLE docs_relaid RENAME TO docs;`);
  });
}

/** Creates the counters on a store written before they existed (counting what it holds once), and the key triggers. */
function ensureCounters(db: DatabaseSync): void {
  inTransaction(db, () => {
    const existed =
      db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'doc_counts'").get() !== undefined;
    db.exec(COUNTERS);
    if (!existed)
      db.exec(
        'INSERT INTO doc_counts (collection, facet, n) SELECT collection, facet, COUNT(*) FROM docs GROUP BY collection, facet',
      );
    db.exec(KEY_TRIGGERS);
  });
}

/** Every table, index and trigger of the read store, made or brought up to date on open. */
export function ensureLayout(db: DatabaseSync): void {
  migrateDocsLayout(db);
  db.exec(SCHEMA);
  ensureCounters(db);
  inTransaction(db, () => ensureChunks(db));
  inTransaction(db, () => ensureHistory(db));
}
