import { closeSync, fsyncSync, openSync } from 'node:fs';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { inReadTransaction, inTransaction, openSqlite } from '../../config/sqlite.ts';
import type { DeltaQuery, KeysetQuery, ListPage, ListQuery, ReadStore, StoredDoc } from '../port.ts';
import { storedFromTexts } from '../stored-doc.ts';
import type { HistoryStore } from '../history/port.ts';
import { startBuildWriter, type BuildWriter } from './build-writer.ts';
import { commitParts, stagedParts, type SharedChain } from './commit-rows.ts';
import { CLEAR_CHUNKS, createChunkIndex, ensureChunks } from './list-chunks.ts';
import { createSqliteCommitter } from './sqlite-commit.ts';
import { statementCache } from './statement-cache.ts';
import { CLEAR_HISTORY, createSqliteHistory, ensureHistory } from './sqlite-history.ts';
import { watchWalHeader } from './wal-header.ts';

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

/**
 * The memory map of a read-store connection unless told otherwise (PULSEBOARD_SQLITE_MAP_MB): none.
 * A map's pages count in the server's resident memory, and it made no read much cheaper.
 */
export const MAP_BYTES_DEFAULT = 0;
/**
 * Page cache of a read-store connection while it commits a large batch, in KiB (256 MiB): the cache
 * holds the batch's dirty pages, so they are not spilled to the WAL mid-transaction and written again.
 */
const WRITE_CACHE_KIB = 262_144;
/**
 * Page cache of a read-store connection otherwise, in KiB (16 MiB). Reads of the first mapBytes of
 * the file (none by default) come through the memory map and use no cache; the pages after it (the
 * 1M-project read model is 5.8 GB) are read into this cache, which is process memory. With 256 MiB
 * here every serving connection grew to 256 MiB under read load at 1M projects (issue 12).
 */
const READ_CACHE_KIB = 16_384;
/**
 * Page size of a read-store file made new (a replay's generation, a first start); older files keep
 * theirs. Chosen when history rows held whole documents (two filled a 4 KiB page, a third's room unused).
 */
const PAGE_SIZE = 8_192;
/** A replay's new generation (`bulkBuild`), on every connection writing it: no journal, no sync until `close`. */
const BUILD_PRAGMAS = ['PRAGMA journal_mode = OFF', 'PRAGMA synchronous = OFF'];
/** A commit of at least this many documents gets the write cache for its transaction. */
const LARGE_COMMIT_DOCS = 1_000;
const CACHE_PRAGMA = (kib: number) => `PRAGMA cache_size = -${kib}`;
/**
 * The page cache setting of a connection that writes large batches (a commit of LARGE_COMMIT_DOCS or
 * more has it for its transaction), exported so benchmarks give their raw-SQLite write baseline the same.
 */
export const READ_STORE_PRAGMAS = CACHE_PRAGMA(WRITE_CACHE_KIB);

/**
 * What listings read: everything but the projector-private state, `doc` as its UTF-8 bytes (a cast of
 * TEXT to BLOB copies the stored bytes as they are: the text is never decoded to a JS string to be
 * encoded back when a response is written). `prefix` names the table in a join.
 */
const listed = (prefix = ''): string =>
  `${prefix}id, CAST(${prefix}doc AS BLOB), ${prefix}seq, ${prefix}written_at, ${prefix}sort_key, ${prefix}facet, ${prefix}keys`;
/** What `get` reads: the listing's columns and the state. */
const WITH_STATE = `${listed()}, state`;

/** A row of `listed()` (and `state` after it for `get`), read as an array. */
type DocRow = [
  id: string,
  doc: Uint8Array,
  seq: number,
  writtenAt: string,
  sortKey: string,
  facet: string,
  keys: string,
  state?: string,
];

/** A row as the port's stored document (parsed on first access; listing rows carry no state). */
function toStored<D, S>(row: DocRow): StoredDoc<D, S> {
  return storedFromTexts<D, S>({
    id: row[0],
    doc: row[1],
    state: row[7],
    seq: row[2],
    writtenAt: row[3],
    sortKey: row[4],
    facet: row[5],
    keys: row[6],
  });
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Listing order: sortKey descending, then id descending. */
function newestFirst(a: DocRow, b: DocRow): number {
  if (a[4] !== b[4]) return a[4] < b[4] ? 1 : -1;
  return a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0;
}

/** The SQL condition for a facet list ('' when unfiltered); its values are bound after the collection. */
function facetClause(facets: readonly string[] | undefined): string {
  if (facets === undefined) return '';
  if (facets.length === 0) return 'AND 0';
  return `AND facet IN (${facets.map(() => '?').join(',')})`;
}

/**
 * A LIMIT written into the statement's text: a value bound to `LIMIT ?` expires the statement (the
 * planner reads it), so every run would prepare it again. One kept statement per limit value.
 */
export function sqlLimit(limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError('a page limit must be a non-negative integer');
  return String(limit);
}

/**
 * The page queries, exported so test/readmodels/query-plans.test.ts can check that each stays an index
 * range (EXPLAIN QUERY PLAN) with the very text the store runs.
 */
export const pageQueries = {
  /**
   * Params: collection, key, value. The documents holding a lookup value, with their state, in one
   * statement: a range of doc_keys' primary key (in id order), each document by its own.
   */
  byKey: (limit: number): string =>
    `SELECT ${listed('d.')}, d.state FROM doc_keys k JOIN docs d ON d.collection = k.collection AND d.id = k.id
      WHERE k.collection = ? AND k.key = ? AND k.value = ? ORDER BY k.id LIMIT ${sqlLimit(limit)}`,
  /**
   * Params: collection, facets…, [the bound's sort key and id when `bounded`], offset. The page's
   * `offset` counts from the bound (readmodels/list-chunks.ts: the edge of the chunk the page starts
   * in, so the offset is at most one chunk's rows), or from the end of the listing when unbounded: the
   * newest end, or (`reversed`) the oldest, walked upward from a bound that is inclusive.
   * The page's rows come in no defined order (sorting them in SQL would take a temporary B-tree): the
   * store orders the page itself.
   */
  list: (facets: readonly string[] | undefined, reversed: boolean, bounded: boolean, limit: number): string => {
    const order = reversed ? 'ASC' : 'DESC';
    const bound = bounded ? `AND (sort_key, id) ${reversed ? '>=' : '<'} (?, ?)` : '';
    return `SELECT ${listed('docs.')} FROM (SELECT rowid AS row FROM docs WHERE collection = ? ${facetClause(facets)} ${bound}
        ORDER BY sort_key ${order}, id ${order} LIMIT ${sqlLimit(limit)} OFFSET ?) AS page
      CROSS JOIN docs ON docs.rowid = page.row`;
  },
  /** Params: collection, facets…, [sortKey, sortKey, id when `before`]. */
  keyset: (facets: readonly string[] | undefined, before: boolean, limit: number): string =>
    `SELECT ${listed()} FROM docs WHERE collection = ? ${facetClause(facets)} ${before ? 'AND sort_key <= ? AND (sort_key < ? OR id < ?)' : ''}
      ORDER BY sort_key DESC, id DESC LIMIT ${sqlLimit(limit)}`,
  /**
   * Params: collection, fromSeq, upToSeq, [seq, id when `tieBreak`], facets…. Both bounds on seq make
   * every page an index range that starts at the cursor, at any depth; the id tie-break applies only
   * within the cursor's own seq.
   */
  delta: (facets: readonly string[] | undefined, tieBreak: boolean, limit: number): string =>
    `SELECT ${listed()} FROM docs WHERE collection = ? AND seq >= ? AND seq <= ? ${tieBreak ? 'AND (seq > ? OR id > ?)' : ''} ${facetClause(facets)}
      ORDER BY seq, id LIMIT ${sqlLimit(limit)}`,
};

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

export type SqliteReadStoreOptions = {
  /** Write without a journal and sync only on close (a replay's new generation; see generations.ts). */
  bulkBuild?: boolean;
  /** How many bytes of the file to map into memory (0: none); MAP_BYTES_DEFAULT when absent. */
  mapBytes?: number;
  /** The page cache outside large commits, in KiB; READ_CACHE_KIB when absent (a one-pass scan needs little). */
  readCacheKiB?: number;
};

/** The embedded read store: one SQLite file holding every collection. */
export function createSqliteReadStore(path: string, options: SqliteReadStoreOptions = {}): ReadStore {
  const db = openSqlite(path, { pageSize: PAGE_SIZE });
  // Page reads from a memory map (when one is asked for) instead of a read() call and a copy each. The
  // mapped pages are the operating system's file cache (shared, reclaimable), not process heap, but
  // they count in the resident set: `mapBytes` trades one for the other.
  db.exec(`PRAGMA mmap_size = ${Math.max(0, Math.floor(options.mapBytes ?? MAP_BYTES_DEFAULT))}`);
  // A commit of many documents changes pages all over the file and its indexes: with SQLite's default
  // 2 MiB cache, dirty pages spill to the WAL mid-transaction and are read back and rewritten many
  // times. So a large commit raises the cache to WRITE_CACHE_KIB for its transaction and lowers it
  // again after (which frees the pages above the smaller size); reads, and the small commits of a
  // projector that has caught up, keep READ_CACHE_KIB.
  const readCacheKiB = options.readCacheKiB ?? READ_CACHE_KIB;
  db.exec(CACHE_PRAGMA(readCacheKiB));
  if (options.bulkBuild) {
    // A replay's new generation (GenerationSpace.open 'build'): written once, read by nobody until the
    // switch, and removed if the replay fails or dies. Pages go straight into the file, without the
    // WAL's second copy or any sync; `close` syncs the file before the replay may switch to it.
    for (const pragma of BUILD_PRAGMAS) db.exec(pragma);
  }
  migrateDocsLayout(db);
  db.exec(SCHEMA);
  ensureCounters(db);
  inTransaction(db, () => ensureChunks(db));
  inTransaction(db, () => ensureHistory(db));

  const prepared = statementCache(db);
  /** A statement reading documents (`listed()`): its rows are DocRows. Its text is never run as another kind. */
  const documents = (sql: string): StatementSync => prepared(sql, true);
  const chunks = createChunkIndex(prepared);
  const history = createSqliteHistory(db, prepared);

  const committer = createSqliteCommitter(db, prepared, history, chunks);
  // Every checkpoint as one JSON text, in one statement.
  const allCheckpoints = prepared('SELECT json_group_object(collection, position) AS positions FROM checkpoints');
  // Changes when another connection (a projector thread or process) commits; this connection's own commits leave it.
  const dataVersion = prepared('PRAGMA data_version');
  // Whether any connection has committed since the checkpoints were read, for one pread (wal-header.ts).
  const walHeader = watchWalHeader(path);
  /**
   * Every checkpoint, read with one statement and kept while the database is unchanged by any other
   * connection: once per event-loop turn (setImmediate) the WAL-index header, and only when it moved
   * `PRAGMA data_version`, says whether another connection has committed since they were read. Within
   * one turn the kept values are as current as a read at its start: a request sent after another
   * process's commit returned is read in a later turn, and this store's own commits (which
   * data_version does not count) drop them.
   */
  let knownCheckpoints: Map<string, number> | null = null;
  let knownVersion = -1;
  let checkedThisTurn = false;
  // One end-of-turn callback at a time: a fresh read clears `checkedThisTurn` without ending the turn,
  // and scheduling another would queue a callback per request.
  let turnEndScheduled = false;
  const endTurn = () => {
    turnEndScheduled = false;
    checkedThisTurn = false;
  };
  const forgetCheckpoints = () => {
    knownCheckpoints = null;
  };
  function checkpointsThisTurn(): Map<string, number> {
    if (checkedThisTurn && knownCheckpoints) return knownCheckpoints;
    if (!knownCheckpoints || !walHeader.unchanged()) {
      // The header, then the version, are read before the checkpoints: a commit after either shows as a change next time.
      walHeader.mark();
      const version = (dataVersion.get() as { data_version: number }).data_version;
      if (!knownCheckpoints || version !== knownVersion) {
        const positions = (allCheckpoints.get() as { positions: string }).positions;
        knownCheckpoints = new Map(Object.entries(JSON.parse(positions) as Record<string, number>));
        knownVersion = version;
      }
    }
    checkedThisTurn = true;
    if (!turnEndScheduled) {
      turnEndScheduled = true;
      setImmediate(endTurn).unref();
    }
    return knownCheckpoints;
  }
  const getOne = documents(`SELECT ${WITH_STATE} FROM docs WHERE collection = ? AND id = ?`);
  // Any number of ids in one statement: the id list travels as one JSON array.
  const getSome = documents(
    `SELECT ${WITH_STATE} FROM docs WHERE collection = ? AND id IN (SELECT value FROM json_each(?))`,
  );
  // Per value, the first `limit` ids in id order (a window over the key's index range for each value).
  const findIdsManyStatement = prepared(`
    SELECT value, id FROM (
      SELECT value, id, row_number() OVER (PARTITION BY value ORDER BY id) AS n FROM doc_keys
      WHERE collection = ? AND key = ? AND value IN (SELECT value FROM json_each(?))
    ) WHERE n <= ? ORDER BY value, id`);
  const findIdsStatement = (limit: number) =>
    prepared(
      `SELECT id FROM doc_keys WHERE collection = ? AND key = ? AND value = ? ORDER BY id LIMIT ${sqlLimit(limit)}`,
    );
  const findDocsStatement = (limit: number) => documents(pageQueries.byKey(limit));
  // A range of doc_keys' primary key: values from the prefix up to the prefix followed by the highest code point.
  const findKeysByPrefixStatement = (limit: number) =>
    prepared(
      `SELECT value, id FROM doc_keys WHERE collection = ? AND key = ? AND value >= ? AND value < ? ORDER BY value, id LIMIT ${sqlLimit(limit)}`,
    );
  const firstWrittenAt = prepared(
    'SELECT seq FROM docs WHERE collection = ? AND written_at >= ? ORDER BY written_at, seq LIMIT 1',
  );
  const countAll = prepared('SELECT COALESCE(SUM(n), 0) AS n FROM doc_counts WHERE collection = ?');

  function count(collection: string, facets: readonly string[] | undefined): number {
    if (facets === undefined) return (countAll.get(collection) as { n: number }).n;
    if (facets.length === 0) return 0;
    const row = prepared(
      `SELECT COALESCE(SUM(n), 0) AS n FROM doc_counts WHERE collection = ? AND facet IN (${facets.map(() => '?').join(',')})`,
    ).get(collection, ...facets) as { n: number };
    return row.n;
  }

  const store: ReadStore & { history: HistoryStore } = {
    history,

    async checkpoint(collection, options) {
      if (options?.fresh) checkedThisTurn = false;
      return checkpointsThisTurn().get(collection) ?? 0;
    },

    async commit(collection, writes, checkpoint, expected) {
      // Kept checkpoints are dropped: this store's own commit is seen by its next read at once.
      forgetCheckpoints();
      const large = writes.length >= LARGE_COMMIT_DOCS;
      if (large) db.exec(CACHE_PRAGMA(WRITE_CACHE_KIB));
      try {
        return committer.commit({ collection, checkpoint, expected }, commitParts(writes));
      } finally {
        if (large && db.isOpen) db.exec(CACHE_PRAGMA(readCacheKiB));
      }
    },

    async get<D, S>(collection: string, id: string) {
      const row = getOne.get(collection, id) as unknown as DocRow | undefined;
      return row ? toStored<D, S>(row) : null;
    },

    async getMany<D, S>(collection: string, ids: readonly string[]) {
      const found = new Map<string, StoredDoc<D, S>>();
      if (ids.length === 0) return found;
      const rows = getSome.all(collection, JSON.stringify(ids)) as unknown as DocRow[];
      for (const row of rows) found.set(row[0], toStored<D, S>(row));
      return found;
    },

    async findIds(collection, key, value, limit) {
      const rows = findIdsStatement(limit).all(collection, key, value) as { id: string }[];
      return rows.map((r) => r.id);
    },

    async findDocs<D, S>(collection: string, key: string, value: string, limit: number) {
      const rows = findDocsStatement(limit).all(collection, key, value) as unknown as DocRow[];
      return rows.map((row) => toStored<D, S>(row));
    },

    async findKeysByPrefix(collection, key, prefix, limit) {
      const rows = findKeysByPrefixStatement(limit).all(collection, key, prefix, `${prefix}\u{10FFFF}`) as {
        value: string;
        id: string;
      }[];
      return rows.map((row) => ({ value: row.value, id: row.id }));
    },

    async findIdsMany(collection, key, values, limit) {
      const found = new Map<string, string[]>();
      if (values.length === 0 || limit <= 0) return found;
      for (const row of findIdsManyStatement.all(collection, key, JSON.stringify([...new Set(values)]), limit) as {
        value: string;
        id: string;
      }[]) {
        const ids = found.get(row.value);
        if (ids) ids.push(row.id);
        else found.set(row.value, [row.id]);
      }
      return found;
    },

    async list<D>(collection: string, query: ListQuery) {
      // Read from whichever end of the listing is nearer (the exact total comes from the counters),
      // starting at the edge of the chunk the page falls in (readmodels/list-chunks.ts): a page costs
      // the chunk counts before it and at most one chunk's rows of the listing index, at any depth.
      // The total, the chunks' counts and the rows come from one snapshot: a commit from another
      // connection (the projectors' thread) between them would place the page by counts the rows no
      // longer have, and answer a total that is not the rows'.
      return inReadTransaction(db, (): ListPage<D> => {
        const total = count(collection, query.facets);
        const limit = Math.max(0, Math.min(query.limit, total - query.offset));
        if (limit === 0) return { total, docs: [] };
        const fromEnd = total - query.offset - limit;
        const reversed = fromEnd < query.offset;
        const start = chunks.locate(collection, query.facets, reversed, reversed ? fromEnd : query.offset);
        const rows = documents(pageQueries.list(query.facets, reversed, start.bound !== null, limit)).all(
          collection,
          ...(query.facets ?? []),
          ...(start.bound ? [start.bound.key, start.bound.id] : []),
          start.skip,
        ) as unknown as DocRow[];
        rows.sort(newestFirst);
        return { total, docs: rows.map((r) => toStored<D, unknown>(r)) };
      });
    },

    async count(collection, facets) {
      return count(collection, facets);
    },

    async listKeyset<D>(collection: string, query: KeysetQuery) {
      const params: (string | number)[] = [collection, ...(query.facets ?? [])];
      if (query.before) params.push(query.before.sortKey, query.before.sortKey, query.before.id);
      const rows = documents(pageQueries.keyset(query.facets, query.before !== undefined, query.limit)).all(
        ...params,
      ) as unknown as DocRow[];
      return rows.map((r) => toStored<D, unknown>(r));
    },

    async delta<D>(collection: string, query: DeltaQuery) {
      let after: { seq: number; id: string | null };
      if ('after' in query.start) {
        after = query.start.after;
      } else {
        // writtenAt never decreases with seq (both come from the log), so a time maps to a first seq
        // and the walk can use the (seq, id) index instead of sorting every later row.
        const first = firstWrittenAt.get(collection, query.start.fromWrittenAt) as { seq: number } | undefined;
        if (!first) return [];
        after = { seq: first.seq, id: null };
      }
      const rows = documents(pageQueries.delta(query.facets, after.id !== null, query.limit)).all(
        collection,
        after.seq,
        query.upToSeq,
        ...(after.id === null ? [] : [after.seq, after.id]),
        ...(query.facets ?? []),
      ) as unknown as DocRow[];
      return rows.map((r) => toStored<D, unknown>(r));
    },

    async clear() {
      forgetCheckpoints();
      inTransaction(db, () => {
        db.exec(
          `DELETE FROM docs; DELETE FROM doc_keys; DELETE FROM doc_counts; DELETE FROM checkpoints; ${CLEAR_CHUNKS} ${CLEAR_HISTORY}`,
        );
      });
    },

    async close() {
      walHeader.close();
      if (options.bulkBuild && db.isOpen) {
        // Back to WAL (what every other connection expects), then every page on disk before a switch.
        db.exec('PRAGMA journal_mode = WAL');
        db.close();
        syncFile(path);
        return;
      }
      db.close();
    },
  };
  if (!options.bulkBuild) return store;
  // The writer's connection: openSqlite's waiting and statement journals, the build's settings, the write cache.
  const writer = startBuildWriter(path, [
    'PRAGMA busy_timeout = 10000',
    'PRAGMA temp_store = MEMORY',
    ...BUILD_PRAGMAS,
    CACHE_PRAGMA(WRITE_CACHE_KIB),
  ]);
  return writtenByBuildWriter(store, writer, forgetCheckpoints);
}

/**
 * A build store (`bulkBuild`) whose commits its build writer makes on a thread of its own; each read
 * waits until the commits asked for before it are written, so it sees them and never waits on the file.
 */
function writtenByBuildWriter(
  store: ReadStore & { history: HistoryStore },
  writer: BuildWriter,
  forgetCheckpoints: () => void,
): ReadStore {
  const afterWrites = <T extends object>(reads: T): T =>
    Object.fromEntries(
      Object.entries(reads).map(([name, value]) => [
        name,
        typeof value === 'function'
          ? async (...args: unknown[]) => {
              await writer.idle();
              return (value as (...a: unknown[]) => unknown)(...args);
            }
          : value,
      ]),
    ) as T;
  // Each collection's split of shared members, carried from its staged versions to their commit.
  const chains = new Map<string, SharedChain>();
  const chainOf = (collection: string): SharedChain => {
    let chain = chains.get(collection);
    if (!chain) chains.set(collection, (chain = new Map()));
    return chain;
  };
  return {
    ...afterWrites(store),
    history: afterWrites(store.history),
    stageVersions(collection, versions) {
      writer.stage(collection, stagedParts(versions, chainOf(collection)));
    },
    async commit(collection, writes, checkpoint, expected) {
      const chain = chainOf(collection);
      chains.delete(collection);
      const outcome = await writer.commit({ collection, checkpoint, expected }, commitParts(writes, chain));
      // The writer's connection committed: checkpoints this connection kept are stale.
      forgetCheckpoints();
      return outcome;
    },
    async close() {
      await writer.close();
      await store.close();
    },
  };
}
