import { closeSync, fsyncSync, openSync } from 'node:fs';
import type { StatementSync } from 'node:sqlite';
import { inTransaction, openSqlite } from '../../config/sqlite.ts';
import type { ReadStore, StoredDoc } from '../port.ts';
import type { HistoryStore } from '../history/port.ts';
import { startBuildWriter, type BuildWriter } from './build-writer.ts';
import { commitParts, stagedParts, type SharedChain } from './commit-rows.ts';
import { CLEAR_CHUNKS, createChunkIndex } from './list-chunks.ts';
import { createSqliteCommitter } from './sqlite-commit.ts';
import { ensureLayout } from './sqlite-layout.ts';
import { createSqliteListing, pageQueries, sqlLimit, toStored, WITH_STATE, type DocRow } from './sqlite-listing.ts';
import { statementCache } from './statement-cache.ts';
import { CLEAR_HISTORY, createSqliteHistory } from './sqlite-history.ts';
import { watchWalHeader } from './wal-header.ts';

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

function syncFile(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
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
  ensureLayout(db);

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
  const store: ReadStore & { history: HistoryStore } = {
    history,
    ...createSqliteListing(db, prepared, chunks),

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
