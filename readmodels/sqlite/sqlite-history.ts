import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { inReadTransaction } from '../../config/sqlite.ts';
import { OPEN_END, type HistoryStore, type Version, type VersionChange, type WritePoint } from '../history/port.ts';
import type { ListPage } from '../port.ts';
import type { VersionRow } from './commit-rows.ts';
import { storedFromTexts } from '../stored-doc.ts';

/**
 * The SQLite store's history read model (readmodels/history/port.ts), in the read store's own file
 * and written inside its commit transaction:
 * - `history_versions`: one row per public write, [valid_from, valid_to) in log positions;
 * - `history_placements`: where a document stood in the listing, one row per stretch of positions
 *   with the same (sort key, facet), so a board as of P walks about one row per project, not one per write;
 * - `history_counts`: each facet's number of documents after every write that changed it, so a total
 *   as of P is one probe per facet.
 * `history_recorded_from` names collections whose checkpoint was already past 0 when the tables were
 * made (their history misses the writes before it until a replay).
 *
 * A version's shared member (VersionWrite.sharedMember, a project's dossier) of SHARED_TEXT_MIN characters
 * or more is kept in `history_shared_texts`, once per change of it rather than once per version: the
 * version's `doc` is its text without that value, which goes back in at byte `shared_at` when it is read.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS history_versions (
  collection TEXT NOT NULL,
  id TEXT NOT NULL,
  valid_from INTEGER NOT NULL,
  valid_to INTEGER NOT NULL,
  written_at TEXT NOT NULL,
  sort_key TEXT NOT NULL,
  facet TEXT NOT NULL,
  doc TEXT NOT NULL,
  shared_text INTEGER,
  shared_at INTEGER,
  PRIMARY KEY (collection, id, valid_from)
);
CREATE TABLE IF NOT EXISTS history_shared_texts (text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS history_versions_delta ON history_versions (collection, valid_from, id, valid_to);
DROP INDEX IF EXISTS history_versions_time;
CREATE TABLE IF NOT EXISTS history_placements (
  collection TEXT NOT NULL,
  sort_key TEXT NOT NULL,
  id TEXT NOT NULL,
  from_seq INTEGER NOT NULL,
  to_seq INTEGER NOT NULL,
  facet TEXT NOT NULL,
  PRIMARY KEY (collection, sort_key, id, from_seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS history_placements_facet ON history_placements (collection, facet, sort_key, id, from_seq, to_seq);
CREATE TABLE IF NOT EXISTS history_counts (
  collection TEXT NOT NULL,
  facet TEXT NOT NULL,
  at_seq INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (collection, facet, at_seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history_recorded_from (collection TEXT PRIMARY KEY, position INTEGER NOT NULL);
`;

export const CLEAR_HISTORY =
  'DELETE FROM history_versions; DELETE FROM history_shared_texts; DELETE FROM history_placements; DELETE FROM history_counts; DELETE FROM history_recorded_from;';

/** Creates the tables (inside the caller's transaction); a store that held documents before gets its gaps recorded. */
export function ensureHistory(db: DatabaseSync): void {
  const existed =
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history_versions'").get() !== undefined;
  if (existed) addSharedTextColumns(db);
  db.exec(SCHEMA);
  if (existed) return;
  db.exec(
    'INSERT OR IGNORE INTO history_recorded_from (collection, position) SELECT collection, position FROM checkpoints WHERE position > 0',
  );
}

/** A file whose versions predate shared texts gets the columns (NULL: its versions hold whole documents). */
function addSharedTextColumns(db: DatabaseSync): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('history_versions')").all() as { name: string }[];
  if (columns.some((c) => c.name === 'shared_text')) return;
  db.exec(
    'ALTER TABLE history_versions ADD COLUMN shared_text INTEGER; ALTER TABLE history_versions ADD COLUMN shared_at INTEGER',
  );
}

/**
 * SQL for a version's document as UTF-8 bytes: its stored text, with its shared text put back when it has
 * one (`v.` the versions' table prefix, `t.` its shared text's); exported for the bench's raw reads.
 */
export const versionDoc = (v: string, t: string): string =>
  `CASE WHEN ${v}shared_text IS NULL THEN CAST(${v}doc AS BLOB) ELSE CAST(substr(CAST(${v}doc AS BLOB), 1, ${v}shared_at) || ${t}text || substr(CAST(${v}doc AS BLOB), ${v}shared_at + 1) AS BLOB) END`;
/** The version's columns (`v` the versions' table prefix, `t` its shared text's, joined by SHARED_JOIN). */
const VERSION = (v: string, t: string) =>
  `${v}id, ${versionDoc(v, t)}, ${v}valid_from, ${v}written_at, ${v}sort_key, ${v}facet`;
const SHARED_JOIN = (v: string, t: string) => `LEFT JOIN history_shared_texts AS ${t} ON ${t}.rowid = ${v}.shared_text`;
type ReadRow = [id: string, doc: Uint8Array, seq: number, writtenAt: string, sortKey: string, facet: string];

const facetClause = (facets: readonly string[] | undefined, column = 'facet'): string => {
  if (facets === undefined) return '';
  if (facets.length === 0) return 'AND 0';
  return `AND ${column} IN (${facets.map(() => '?').join(',')})`;
};

/** A LIMIT in the statement's text (see sqlite-listing.ts sqlLimit: a bound LIMIT re-prepares every run). */
const limitText = (limit: number): string => {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError('a page limit must be a non-negative integer');
  return String(limit);
};

/**
 * The history's read queries, exported so test/readmodels/history-query-plans.test.ts checks with
 * the very texts the store runs that each is an index range, never a scan or a sort.
 */
export const historyQueries = {
  /** Params: collection, id, at. */
  get: `SELECT ${VERSION('history_versions.', 't.')} FROM history_versions ${SHARED_JOIN('history_versions', 't')}
      WHERE collection = ? AND id = ? AND valid_from <= ? ORDER BY valid_from DESC LIMIT 1`,
  /**
   * Params: collection, at, at, facets…, offset, then at (for the versions). The page's placements
   * valid at `at`, walked in listing order from the newest end or (`reversed`) the oldest, and each
   * one's version valid then (a probe of the versions' primary key).
   */
  list: (facets: readonly string[] | undefined, reversed: boolean, limit: number): string => {
    const order = reversed ? 'ASC' : 'DESC';
    return `SELECT ${VERSION('v.', 't.')} FROM (SELECT id FROM history_placements WHERE collection = ? AND from_seq <= ? AND to_seq > ? ${facetClause(facets)}
        ORDER BY sort_key ${order}, id ${order} LIMIT ${limitText(limit)} OFFSET ?) AS page
      CROSS JOIN history_versions AS v ON v.rowid = (SELECT rowid FROM history_versions
        WHERE collection = ?1 AND id = page.id AND valid_from <= ?2 ORDER BY valid_from DESC LIMIT 1)
      ${SHARED_JOIN('v', 't')}`;
  },
  /** Params: collection, at, at, [sortKey, sortKey, id when `after`], facets…. */
  scan: (facets: readonly string[] | undefined, after: boolean, limit: number): string =>
    `SELECT ${VERSION('v.', 't.')} FROM (SELECT id, sort_key FROM history_placements WHERE collection = ? AND from_seq <= ? AND to_seq > ?
        ${after ? 'AND sort_key <= ? AND (sort_key < ? OR id < ?)' : ''} ${facetClause(facets)}
        ORDER BY sort_key DESC, id DESC LIMIT ${limitText(limit)}) AS page
      CROSS JOIN history_versions AS v ON v.rowid = (SELECT rowid FROM history_versions
        WHERE collection = ?1 AND id = page.id AND valid_from <= ?2 ORDER BY valid_from DESC LIMIT 1)
      ${SHARED_JOIN('v', 't')}`,
  /** Params: collection, facet, at. */
  count: 'SELECT n FROM history_counts WHERE collection = ? AND facet = ? AND at_seq <= ? ORDER BY at_seq DESC LIMIT 1',
  /** Params: collection. Every facet the counts know. */
  facets: 'SELECT DISTINCT facet FROM history_counts WHERE collection = ?',
  /**
   * Params: collection, from, to, to, [seq, seq, id when `after`]. Versions valid at `to` written
   * after `from`, in (seq, id) order, each with the version valid at `from` (a primary-key probe);
   * those whose text is the same at both points are left out (two versions of one text are split alike, so
   * their parts compare; a version stored whole before shared texts is compared whole).
   */
  changes: (after: boolean, limit: number): string =>
    `SELECT ${VERSION('a.', 'ta.')}, ${VERSION('b.', 'tb.')} FROM history_versions AS a
      LEFT JOIN history_versions AS b ON b.rowid = (SELECT rowid FROM history_versions
        WHERE collection = a.collection AND id = a.id AND valid_from <= ?2 ORDER BY valid_from DESC LIMIT 1)
      ${SHARED_JOIN('a', 'ta')} ${SHARED_JOIN('b', 'tb')}
      WHERE a.collection = ?1 AND a.valid_from > ?2 AND a.valid_from <= ?3 AND a.valid_to > ?3
        ${after ? 'AND a.valid_from >= ?4 AND (a.valid_from > ?4 OR a.id > ?5)' : ''}
        AND (b.doc IS NULL OR CASE WHEN (a.shared_text IS NULL) = (b.shared_text IS NULL)
          THEN b.doc <> a.doc OR b.shared_at IS NOT a.shared_at OR (b.shared_text IS NOT a.shared_text AND tb.text <> ta.text)
          ELSE ${versionDoc('b.', 'tb.')} <> ${versionDoc('a.', 'ta.')} END)
      ORDER BY a.valid_from, a.id LIMIT ${limitText(limit)}`,
  /**
   * Params: collection, id. A document's current version (its open placement has the same sort key and
   * facet): what a commit reads once per document it writes, not once per write.
   */
  currentVersion: `SELECT v.valid_from, v.sort_key, v.facet, v.shared_text, t.text FROM history_versions AS v
      ${SHARED_JOIN('v', 't')}
      WHERE v.collection = ? AND v.id = ? ORDER BY v.valid_from DESC LIMIT 1`,
  /** Params: collection, seq. */
  pointAtSeq:
    'SELECT valid_from, written_at FROM history_versions WHERE collection = ? AND valid_from <= ? ORDER BY valid_from DESC LIMIT 1',
};

const toVersion = <D>(row: ReadRow): Version<D> =>
  storedFromTexts<D, null>({
    id: row[0],
    doc: row[1],
    state: undefined,
    seq: row[2],
    writtenAt: row[3],
    sortKey: row[4],
    facet: row[5],
    keys: '{}',
  });

type Prepare = (sql: string, rowsAsArrays?: boolean) => StatementSync;

/** Versions per multi-row INSERT: one statement run for many rows instead of one per row. */
const VERSIONS_PER_INSERT = 32;
const VERSION_COLUMNS = 10;
const VERSION_VALUES = `(${Array.from({ length: VERSION_COLUMNS }, () => '?').join(', ')})`;
const insertVersions = (rows: number) =>
  `INSERT INTO history_versions (collection, id, valid_from, valid_to, written_at, sort_key, facet, doc, shared_text, shared_at)
    VALUES ${Array.from({ length: rows }, () => VERSION_VALUES).join(', ')}`;

/**
 * A commit's versions being recorded: `add` them (each document's in log order; documents in any order),
 * then `end` (inside the commit's transaction), which writes the placements and counts they moved.
 */
export type HistoryCommit = { add(rows: readonly VersionRow[]): void; end(): void };

export type SqliteHistory = HistoryStore & {
  /** Starts recording a commit's versions of one collection. */
  open(collection: string): HistoryCommit;
};

/** A document's current version as stored, read once per commit. */
type Current = [validFrom: number, sortKey: string, facet: string, sharedId: number | null, shared: string | null];
/** Where a document stands in the listing; `from` -1: the placement stored before this commit, still open. */
type Placed = { sortKey: string; facet: string; from: number };
/** A document's member text as its version before kept it: the text's row and the text. */
type SharedText = { ref: number; text: string };
/** What a commit tracks per document while its versions come. */
type Recording = { skipTo: number; stored: Current | undefined; placed: Placed | null; shared: SharedText | null };

/**
 * The member text a version refers to: the one before it when it is the same value (the very value, or
 * the same text), else a new row. Null when the version is stored whole.
 */
function sharedTextOf(row: VersionRow, before: SharedText | null, insert: (text: string) => number): SharedText | null {
  const [id, seq, , , , , , at, member] = row;
  if (at === null) return null;
  if (member === null) {
    // The very value of the version before it in this commit, which was kept apart too.
    if (before === null) throw new Error(`version ${seq} of ${id} refers to a member no version before it kept`);
    return before;
  }
  if (before !== null && member === before.text) return before;
  return { ref: insert(member), text: member };
}

/** The history over the read store's connection; `prepare` is the store's statement cache. */
export function createSqliteHistory(db: DatabaseSync, prepare: Prepare): SqliteHistory {
  const currentVersion = prepare(historyQueries.currentVersion, true);
  const insertSharedText = prepare('INSERT INTO history_shared_texts (text) VALUES (?)');
  const closeVersion = prepare(
    'UPDATE history_versions SET valid_to = ? WHERE collection = ? AND id = ? AND valid_from = ?',
  );
  const insertVersion = prepare(insertVersions(1));
  const insertManyVersions = prepare(insertVersions(VERSIONS_PER_INSERT));
  const closePlacement = prepare(
    `UPDATE history_placements SET to_seq = ? WHERE collection = ? AND sort_key = ? AND id = ? AND to_seq = ${OPEN_END}`,
  );
  const insertPlacement = prepare(
    'INSERT INTO history_placements (collection, sort_key, id, from_seq, to_seq, facet) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const countNow = prepare(
    'SELECT n FROM history_counts WHERE collection = ? AND facet = ? ORDER BY at_seq DESC LIMIT 1',
    true,
  );
  const setCount = prepare(
    'INSERT INTO history_counts (collection, facet, at_seq, n) VALUES (?, ?, ?, ?) ON CONFLICT (collection, facet, at_seq) DO UPDATE SET n = excluded.n',
  );
  const recordedFrom = prepare('SELECT position FROM history_recorded_from WHERE collection = ?', true);
  const documents = (sql: string) => prepare(sql, true);

  function count(collection: string, at: number, facets: readonly string[] | undefined): number {
    const names =
      facets ?? (prepare(historyQueries.facets, true).all(collection) as unknown as [string][]).map((r) => r[0]);
    const probe = prepare(historyQueries.count, true);
    let total = 0;
    for (const facet of names) total += (probe.get(collection, facet, at) as unknown as [number] | undefined)?.[0] ?? 0;
    return total;
  }

  const point = (row: [number, string] | undefined): WritePoint | null =>
    row ? { seq: row[0], writtenAt: row[1] } : null;

  return {
    open(collection) {
      const recording = new Map<string, Recording>();
      // The facets' moves, counted in log order at `end` (documents' versions may come interleaved in any order).
      const moves: { seq: number; facet: string; by: 1 | -1 }[] = [];
      const move = (seq: number, facet: string, by: 1 | -1) => moves.push({ seq, facet, by });
      const params: (string | number | null)[] = [];

      return {
        add(rows) {
          for (const row of rows) {
            const [id, seq, validTo, writtenAt, sortKey, facet, doc, at] = row;
            let r = recording.get(id);
            if (r === undefined) {
              const stored = currentVersion.get(collection, id) as unknown as Current | undefined;
              r = {
                skipTo: stored?.[0] ?? -1,
                stored,
                placed: stored ? { sortKey: stored[1], facet: stored[2], from: -1 } : null,
                shared: stored?.[3] != null ? { ref: stored[3], text: stored[4]! } : null,
              };
              recording.set(id, r);
            }
            // A write already recorded (the same batch committed again) changes nothing.
            if (seq <= r.skipTo) continue;
            // Only a document's version stored before is updated: the commit's own are closed as they come.
            if (r.stored) {
              closeVersion.run(seq, collection, id, r.stored[0]);
              r.stored = undefined;
            }
            const placed = r.placed;
            if (!placed || placed.sortKey !== sortKey || placed.facet !== facet) {
              // It moved in the listing (or appeared): a new placement, and the facets' counts follow.
              if (placed && placed.facet !== facet) move(seq, placed.facet, -1);
              if (!placed || placed.facet !== facet) move(seq, facet, 1);
              if (placed?.from === -1) closePlacement.run(seq, collection, placed.sortKey, id);
              else if (placed) insertPlacement.run(collection, placed.sortKey, id, placed.from, seq, placed.facet);
              r.placed = { sortKey, facet, from: seq };
            }
            r.shared = sharedTextOf(row, r.shared, (text) => Number(insertSharedText.run(text).lastInsertRowid));
            params.push(collection, id, seq, validTo, writtenAt, sortKey, facet, doc, r.shared?.ref ?? null, at);
            if (params.length === VERSIONS_PER_INSERT * VERSION_COLUMNS) {
              insertManyVersions.run(...params);
              params.length = 0;
            }
          }
        },
        end() {
          for (let i = 0; i < params.length; i += VERSION_COLUMNS)
            insertVersion.run(...params.slice(i, i + VERSION_COLUMNS));
          params.length = 0;
          for (const [id, r] of recording)
            if (r.placed && r.placed.from !== -1)
              insertPlacement.run(collection, r.placed.sortKey, id, r.placed.from, OPEN_END, r.placed.facet);
          // Each facet's number after every move, from its last stored one.
          const counts = new Map<string, number>();
          moves.sort((a, b) => a.seq - b.seq);
          for (const { seq, facet, by } of moves) {
            const n =
              (counts.get(facet) ?? (countNow.get(collection, facet) as unknown as [number] | undefined)?.[0] ?? 0) +
              by;
            counts.set(facet, n);
            setCount.run(collection, facet, seq, n);
          }
          moves.length = 0;
        },
      };
    },

    async recordedFrom(collection) {
      return (recordedFrom.get(collection) as unknown as [number] | undefined)?.[0] ?? 0;
    },

    async pointAtSeq(collection, seq) {
      return point(
        prepare(historyQueries.pointAtSeq, true).get(collection, seq) as unknown as [number, string] | undefined,
      );
    },

    async get<D>(collection: string, id: string, at: number) {
      const row = documents(historyQueries.get).get(collection, id, at) as unknown as ReadRow | undefined;
      return row ? toVersion<D>(row) : null;
    },

    async getMany<D>(collection: string, ids: readonly string[], at: number) {
      const found = new Map<string, Version<D>>();
      const statement = documents(historyQueries.get);
      for (const id of new Set(ids)) {
        const row = statement.get(collection, id, at) as unknown as ReadRow | undefined;
        if (row) found.set(id, toVersion<D>(row));
      }
      return found;
    },

    async list<D>(
      collection: string,
      at: number,
      query: { facets?: readonly string[]; offset: number; limit: number },
    ) {
      // The total and the rows from one snapshot, as the live board's; read from the nearer end.
      return inReadTransaction(db, (): ListPage<D> => {
        const total = count(collection, at, query.facets);
        const limit = Math.max(0, Math.min(query.limit, total - query.offset));
        if (limit === 0) return { total, docs: [] };
        const fromEnd = total - query.offset - limit;
        const reversed = fromEnd < query.offset;
        const rows = documents(historyQueries.list(query.facets, reversed, limit)).all(
          collection,
          at,
          at,
          ...(query.facets ?? []),
          reversed ? fromEnd : query.offset,
        ) as unknown as ReadRow[];
        rows.sort((a, b) => (a[4] !== b[4] ? (a[4] < b[4] ? 1 : -1) : a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0));
        return { total, docs: rows.map((r) => toVersion<D>(r)) };
      });
    },

    async count(collection, at, facets) {
      return inReadTransaction(db, () => count(collection, at, facets));
    },

    async scan<D>(
      collection: string,
      at: number,
      query: { facets?: readonly string[]; after?: { sortKey: string; id: string }; limit: number },
    ) {
      const params: (string | number)[] = [collection, at, at];
      if (query.after) params.push(query.after.sortKey, query.after.sortKey, query.after.id);
      params.push(...(query.facets ?? []));
      const rows = documents(historyQueries.scan(query.facets, query.after !== undefined, query.limit)).all(
        ...params,
      ) as unknown as ReadRow[];
      return rows.map((r) => toVersion<D>(r));
    },

    async changes<D>(
      collection: string,
      query: { from: number; to: number; after?: { seq: number; id: string }; limit: number },
    ) {
      const params: (string | number)[] = [collection, query.from, query.to];
      if (query.after) params.push(query.after.seq, query.after.id);
      const rows = documents(historyQueries.changes(query.after !== undefined, query.limit)).all(
        ...params,
      ) as unknown as (ReadRow[number] | null)[][];
      return rows.map((r): VersionChange<D> => ({
        after: toVersion<D>(r.slice(0, 6) as ReadRow),
        before: r[6] === null ? null : toVersion<D>(r.slice(6) as ReadRow),
      }));
    },
  };
}
