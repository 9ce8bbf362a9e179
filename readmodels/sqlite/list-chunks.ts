import type { DatabaseSync, StatementSync } from 'node:sqlite';
import {
  CHUNK_ROWS_MAX,
  consultsChunks,
  FIRST_CHUNK,
  pageFinder,
  pieceCutter,
  type ChunkStart,
  type PageStart,
  type Piece,
} from '../list-chunks.ts';

/**
 * The SQLite store's listing chunks (readmodels/list-chunks.ts): `list_chunks` (rows per chunk) and
 * `list_chunk_facets` (rows per chunk and facet), kept by triggers on `docs` in the transaction that
 * writes the documents, and cut again by the commit (`cutFullChunks`).
 */

/** The chunk holding (collection, sortKey, id): the one with the greatest start at or before it. */
const chunkOf = (row: 'NEW' | 'OLD') => `(SELECT start_key, start_id FROM list_chunks
    WHERE collection = ${row}.collection AND (start_key, start_id) <= (${row}.sort_key, ${row}.id)
    ORDER BY start_key DESC, start_id DESC LIMIT 1)`;

const countIn = (row: 'NEW' | 'OLD', by: '+ 1' | '- 1') => `
  INSERT INTO list_chunk_facets (collection, start_key, start_id, facet, n)
    SELECT collection, start_key, start_id, ${row}.facet, ${by === '+ 1' ? 1 : -1} FROM list_chunks
    WHERE collection = ${row}.collection AND (start_key, start_id) <= (${row}.sort_key, ${row}.id)
    ORDER BY start_key DESC, start_id DESC LIMIT 1
    ON CONFLICT (collection, start_key, start_id, facet) DO UPDATE SET n = n ${by};
  UPDATE list_chunks SET total = total ${by} WHERE collection = ${row}.collection AND (start_key, start_id) = ${chunkOf(row)};`;

const CHUNKS = `
CREATE TABLE IF NOT EXISTS list_chunks (
  collection TEXT NOT NULL,
  start_key TEXT NOT NULL,
  start_id TEXT NOT NULL,
  total INTEGER NOT NULL,
  PRIMARY KEY (collection, start_key, start_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS list_chunks_full ON list_chunks (collection) WHERE total > ${CHUNK_ROWS_MAX};
CREATE TABLE IF NOT EXISTS list_chunk_facets (
  collection TEXT NOT NULL,
  start_key TEXT NOT NULL,
  start_id TEXT NOT NULL,
  facet TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (collection, start_key, start_id, facet)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS docs_chunked_on_insert AFTER INSERT ON docs BEGIN
  INSERT OR IGNORE INTO list_chunks (collection, start_key, start_id, total) VALUES (NEW.collection, '${FIRST_CHUNK.key}', '${FIRST_CHUNK.id}', 0);
  ${countIn('NEW', '+ 1')}
END;
CREATE TRIGGER IF NOT EXISTS docs_chunked_on_move AFTER UPDATE OF sort_key, facet ON docs
  WHEN OLD.sort_key IS NOT NEW.sort_key OR OLD.facet IS NOT NEW.facet BEGIN
  ${countIn('OLD', '- 1')}
  ${countIn('NEW', '+ 1')}
END;
`;

export const CLEAR_CHUNKS = 'DELETE FROM list_chunks; DELETE FROM list_chunk_facets;';

/** The queries of the chunks, exported for the query-plan test (test/readmodels/query-plans.test.ts). */
export const chunkQueries = {
  /** Params: collection, facets…. Each chunk's rows in those facets (every row when `facets` is undefined), from the newest end or (`ascending`) the oldest. */
  walk: (facets: readonly string[] | undefined, ascending: boolean): string => {
    const order = ascending ? 'ASC' : 'DESC';
    if (facets === undefined)
      return `SELECT start_key, start_id, total FROM list_chunks WHERE collection = ? ORDER BY start_key ${order}, start_id ${order}`;
    return `SELECT start_key, start_id, SUM(n) FROM list_chunk_facets WHERE collection = ? AND facet IN (${facets.map(() => '?').join(',')})
      GROUP BY start_key, start_id ORDER BY start_key ${order}, start_id ${order}`;
  },
  /** Params: collection. Chunks past CHUNK_ROWS_MAX (a partial index holds only those). */
  full: `SELECT start_key, start_id, total FROM list_chunks WHERE collection = ? AND total > ${CHUNK_ROWS_MAX}`,
  /** Params: collection, start key, start id. */
  next: 'SELECT start_key, start_id FROM list_chunks WHERE collection = ? AND (start_key, start_id) > (?, ?) ORDER BY start_key, start_id LIMIT 1',
  /** Params: collection, start key, start id, [next start key, next start id]. A chunk's rows in listing order, oldest first. */
  rows: (bounded: boolean): string =>
    `SELECT sort_key, id, facet FROM docs WHERE collection = ? AND (sort_key, id) >= (?, ?) ${bounded ? 'AND (sort_key, id) < (?, ?)' : ''} ORDER BY sort_key, id`,
};

export type ChunkIndex = {
  /** The start of the page `skip` rows from the newest end of the listing, or from the oldest (`ascending`). */
  locate(collection: string, facets: readonly string[] | undefined, ascending: boolean, skip: number): PageStart;
  /** Cuts every chunk of `collection` over CHUNK_ROWS_MAX again (inside the caller's transaction). */
  cutFullChunks(collection: string): void;
};

type Prepare = (sql: string, rowsAsArrays?: boolean) => StatementSync;

/** Replaces the chunk starting at `start` by the pieces of its rows (one walk of them). */
function cutChunk(prepare: Prepare, collection: string, start: ChunkStart, total: number): void {
  const next = prepare(chunkQueries.next, true).get(collection, start.key, start.id) as [string, string] | undefined;
  prepare('DELETE FROM list_chunks WHERE collection = ? AND start_key = ? AND start_id = ?').run(
    collection,
    start.key,
    start.id,
  );
  prepare('DELETE FROM list_chunk_facets WHERE collection = ? AND start_key = ? AND start_id = ?').run(
    collection,
    start.key,
    start.id,
  );
  const insertChunk = prepare('INSERT INTO list_chunks (collection, start_key, start_id, total) VALUES (?, ?, ?, ?)');
  const insertFacet = prepare(
    'INSERT INTO list_chunk_facets (collection, start_key, start_id, facet, n) VALUES (?, ?, ?, ?, ?)',
  );
  const write = (piece: Piece) => {
    insertChunk.run(collection, piece.start.key, piece.start.id, piece.total);
    for (const [facet, n] of piece.facets) insertFacet.run(collection, piece.start.key, piece.start.id, facet, n);
  };
  const cutter = pieceCutter(start, total);
  const rows = prepare(chunkQueries.rows(next !== undefined), true).iterate(
    collection,
    start.key,
    start.id,
    ...(next ?? []),
  );
  for (const [sortKey, id, facet] of rows as Iterable<[string, string, string]>) {
    const closed = cutter.add(sortKey, id, facet);
    if (closed) write(closed);
  }
  write(cutter.end());
}

/** A prepare without a cache (opening a store runs each statement a few times at most). */
const preparer =
  (db: DatabaseSync): Prepare =>
  (sql, rowsAsArrays = false) => {
    const statement = db.prepare(sql);
    if (rowsAsArrays) statement.setReturnArrays(true);
    return statement;
  };

/**
 * Creates the chunk tables and triggers (inside the caller's transaction); on a store written before
 * they existed, cuts each collection's listing into chunks once (one walk of every listing).
 */
export function ensureChunks(db: DatabaseSync): void {
  const existed =
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'list_chunks'").get() !== undefined;
  db.exec(CHUNKS);
  if (existed) return;
  const collections = db.prepare('SELECT collection, SUM(n) AS n FROM doc_counts GROUP BY collection').all() as {
    collection: string;
    n: number;
  }[];
  for (const { collection, n } of collections) if (n > 0) cutChunk(preparer(db), collection, FIRST_CHUNK, n);
}

export function createChunkIndex(prepare: Prepare): ChunkIndex {
  return {
    locate(collection, facets, ascending, skip) {
      if (!consultsChunks(skip)) return { bound: null, skip };
      const finder = pageFinder(ascending, skip);
      const chunks = prepare(chunkQueries.walk(facets, ascending), true).iterate(collection, ...(facets ?? []));
      for (const [key, id, n] of chunks as Iterable<[string, string, number]>) {
        const found = finder.feed({ key, id }, n);
        if (found) return found;
      }
      return finder.end();
    },

    cutFullChunks(collection) {
      const full = prepare(chunkQueries.full, true);
      const fullChunks = () => full.all(collection) as unknown as [string, string, number][];
      for (let chunks = fullChunks(); chunks.length > 0; chunks = fullChunks()) {
        for (const [key, id, total] of chunks) cutChunk(prepare, collection, { key, id }, total);
      }
    },
  };
}
