import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { inReadTransaction } from '../../config/sqlite.ts';
import type { DeltaQuery, KeysetQuery, ListPage, ListQuery, ReadStore, StoredDoc } from '../port.ts';
import { storedFromTexts } from '../stored-doc.ts';
import type { ChunkIndex } from './list-chunks.ts';
import type { Prepare } from './statement-cache.ts';

/**
 * What listings read: everything but the projector-private state, `doc` as its UTF-8 bytes (a cast of
 * TEXT to BLOB copies the stored bytes as they are: the text is never decoded to a JS string to be
 * encoded back when a response is written). `prefix` names the table in a join.
 */
export const listed = (prefix = ''): string =>
  `${prefix}id, CAST(${prefix}doc AS BLOB), ${prefix}seq, ${prefix}written_at, ${prefix}sort_key, ${prefix}facet, ${prefix}keys`;
/** What `get` reads: the listing's columns and the state. */
export const WITH_STATE = `${listed()}, state`;

/** A row of `listed()` (and `state` after it for `get`), read as an array. */
export type DocRow = [
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
export function toStored<D, S>(row: DocRow): StoredDoc<D, S> {
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

/**
 * The board's reads (pages by number, keyset pages, deltas and totals): each an index range over the
 * listing or delta index, its total from the counters the triggers keep (sqlite-layout.ts).
 */
export function createSqliteListing(
  db: DatabaseSync,
  prepared: Prepare,
  chunks: ChunkIndex,
): Pick<ReadStore, 'list' | 'count' | 'listKeyset' | 'delta'> {
  /** A statement reading documents (`listed()`): its rows are DocRows. */
  const documents = (sql: string): StatementSync => prepared(sql, true);
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

  return {
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
  };
}
