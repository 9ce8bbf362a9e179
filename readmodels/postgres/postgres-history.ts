/**
 * The PostgreSQL store's history read model (readmodels/history/port.ts), in `history_*` tables of the
 * generation's schema (so a replay builds them with the rest, and drops them with the old generation),
 * written by the read store's commit inside its transaction (`DocWrite.versions`):
 * - `history_versions`: one row per public write, [valid_from, valid_to) in log positions; the version
 *   valid at P is the last key at or before (collection, id, P) of its primary key: one probe;
 * - `history_placements`: where a document stood in the listing, one row per stretch of positions with
 *   the same (sort key, facet), so a board as of P walks about one index key per project, not one per write;
 * - `history_counts`: each facet's number of documents after every write that moved one, so a total as
 *   of P is one probe per facet (`history_facets` names the facets a collection ever had);
 * - `history_shared_texts`: a version's shared member (a project's dossier) once per change of it
 *   (history/shared-member.ts), keyed by the version that brought it; a version referring to one holds
 *   its text without the member, which goes back in at character `shared_at`;
 * - `history_recorded_from`: collections whose checkpoint was already past 0 when the tables were made.
 *
 * Documents are the served JSON text (`text`, never `jsonb`, which would not give the same bytes back).
 * Every read is an index range bounded on both sides, or a walk along an index bounded by its limit
 * (postgres-history-sql.ts); a commit is one read and one write statement (postgres-history-write.ts).
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import {
  OPEN_END,
  type HistoryChangesQuery,
  type HistoryPageQuery,
  type HistoryScanQuery,
  type HistoryStore,
  type Version,
  type VersionChange,
  type WritePoint,
} from '../history/port.ts';
import type { DocWrite, ListPage } from '../port.ts';
import { storedFromTexts } from '../stored-doc.ts';
import { historySql } from './postgres-history-sql.ts';
import { planHistoryWrite, versionsToRecord, writeParams, type StoredCurrent } from './postgres-history-write.ts';
import { withClient } from './postgres-pool.ts';

export type PostgresHistory = HistoryStore & {
  /** Creates the history tables in the generation's schema; idempotent; run once when the store opens. */
  ensureTables(client: pg.ClientBase): Promise<void>;
  /**
   * Inside the store's commit transaction, before it moves the checkpoint: records the versions `writes`
   * carry (DocWrite.versions), given the collection's checkpoint before this commit.
   */
  write(
    client: pg.ClientBase,
    collection: string,
    writes: readonly DocWrite[],
    previousCheckpoint: number,
  ): Promise<void>;
  /** Empties the history tables (the store's clear()). */
  clear(client: pg.ClientBase): Promise<void>;
};

/** A position as an index bound: a whole number in [0, OPEN_END] (a read before 0 finds nothing anyway). */
const position = (at: number): number => Math.max(0, Math.min(OPEN_END, Math.floor(at)));

/** A page's limit or offset as a bound parameter: a whole, non-negative number. */
const pageBound = (n: number): number => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('a page limit or offset must be a non-negative integer');
  return n;
};

/** Offsets below which a page is walked from the front in one statement, without its total first. */
const NEAR_FRONT = 1000;

/** SQLSTATE undefined_table: a generation whose tables its store has not made yet holds no history. */
const UNDEFINED_TABLE = '42P01';
const notMadeYet = (error: unknown) => error instanceof pg.DatabaseError && error.code === UNDEFINED_TABLE;

type ReadRow = { id: string; doc: string; seq: number | string; written_at: string; sort_key: string; facet: string };

const toVersion = <D>(row: ReadRow): Version<D> =>
  storedFromTexts<D, null>({
    id: row.id,
    doc: row.doc,
    state: undefined,
    seq: Number(row.seq),
    writtenAt: row.written_at,
    sortKey: row.sort_key,
    facet: row.facet,
    keys: '{}',
  });

/** A statement of fixed text, prepared once per connection (its planning costs about as much as its run). */
const prepared = (text: string) => ({
  name: `history_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`,
  text,
});

type CurrentRow = {
  kind: 'v' | 'c';
  id: string;
  valid_from: number | string | null;
  sort_key: string | null;
  facet: string;
  placed: number | string | null;
  shared_from: number | string | null;
  text: string | null;
  n: number | string | null;
};

/** The history of one generation, in `schema` (the read store's), read through `pool`. */
export function createPostgresHistory(pool: pg.Pool, schema: string): PostgresHistory {
  const sql = historySql(schema);
  const statements = {
    get: prepared(sql.get),
    getMany: prepared(sql.getMany),
    count: prepared(sql.count),
    pointAtSeq: prepared(sql.pointAtSeq),
    recordedFrom: prepared(sql.recordedFrom),
    current: prepared(sql.current),
    write: prepared(sql.write),
  };

  /** `work` on a borrowed connection (`onError` before it goes back); `empty` when the generation's tables are not made yet. */
  async function read<T>(
    work: (client: pg.PoolClient) => Promise<T>,
    empty: () => T,
    onError?: (client: pg.PoolClient) => Promise<unknown>,
  ): Promise<T> {
    try {
      return await withClient(pool, work, onError);
    } catch (error) {
      if (notMadeYet(error)) return empty();
      throw error;
    }
  }

  /** `work` in a REPEATABLE READ READ ONLY transaction: its reads share one snapshot. */
  const inSnapshot = <T>(work: (client: pg.PoolClient) => Promise<T>, empty: () => T): Promise<T> =>
    read(
      async (client) => {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      },
      empty,
      (client) => client.query('ROLLBACK'),
    );

  async function countAt(
    client: pg.ClientBase,
    collection: string,
    at: number,
    facets: readonly string[] | undefined,
  ): Promise<number> {
    if (at < 0 || (facets !== undefined && facets.length === 0)) return 0;
    const result = await client.query<{ n: number | string }>({
      ...statements.count,
      values: [collection, facets ?? null, position(at)],
    });
    return Number(result.rows[0]?.n ?? 0);
  }

  return {
    async ensureTables(client) {
      const { tables } = sql;
      const found = await client.query<{ all: boolean; versions: boolean; checkpoints: boolean }>(sql.existing, [
        Object.values(tables),
        tables.versions,
        sql.storeCheckpoints,
      ]);
      const { all, versions, checkpoints } = found.rows[0]!;
      // Every table there (each open of an existing generation): no DDL, which would queue on the catalog.
      if (all) return;
      for (const ddl of sql.ddl) await client.query(ddl);
      if (!versions && checkpoints) await client.query(sql.recordFromCheckpoints);
    },

    async write(client, collection, writes, previousCheckpoint) {
      const ordered = versionsToRecord(writes, previousCheckpoint);
      if (ordered.length === 0) return;
      const ids = [...new Set(ordered.map((o) => o.id))];
      const read = await client.query<CurrentRow>({ ...statements.current, values: [collection, ids] });
      const stored: StoredCurrent[] = [];
      const latestCounts = new Map<string, number>();
      for (const row of read.rows) {
        if (row.kind === 'c') latestCounts.set(row.facet, Number(row.n));
        else
          stored.push({
            id: row.id,
            from: Number(row.valid_from),
            sortKey: row.sort_key!,
            facet: row.facet,
            placed: Number(row.placed),
            sharedFrom: row.shared_from === null ? null : Number(row.shared_from),
            sharedText: row.text,
          });
      }
      const plan = planHistoryWrite(ordered, stored, latestCounts);
      if (plan.versions.length === 0) return;
      await client.query({ ...statements.write, values: writeParams(collection, plan) });
    },

    async clear(client) {
      await client.query(sql.clear);
    },

    async recordedFrom(collection) {
      return read(
        async (client) => {
          const result = await client.query<{ position: number | string }>({
            ...statements.recordedFrom,
            values: [collection],
          });
          return Number(result.rows[0]?.position ?? 0);
        },
        () => 0,
      );
    },

    async pointAtSeq(collection, seq): Promise<WritePoint | null> {
      if (seq < 0) return null;
      return read(
        async (client) => {
          const result = await client.query<{ valid_from: number | string; written_at: string }>({
            ...statements.pointAtSeq,
            values: [collection, position(seq)],
          });
          const row = result.rows[0];
          return row ? { seq: Number(row.valid_from), writtenAt: row.written_at } : null;
        },
        () => null,
      );
    },

    async get<D>(collection: string, id: string, at: number) {
      if (at < 0) return null;
      return read(
        async (client) => {
          const row = (await client.query<ReadRow>({ ...statements.get, values: [collection, id, position(at)] }))
            .rows[0];
          return row ? toVersion<D>(row) : null;
        },
        () => null,
      );
    },

    async getMany<D>(collection: string, ids: readonly string[], at: number) {
      const found = new Map<string, Version<D>>();
      if (at < 0 || ids.length === 0) return found;
      return read(
        async (client) => {
          const result = await client.query<ReadRow>({
            ...statements.getMany,
            values: [collection, [...new Set(ids)], position(at)],
          });
          for (const row of result.rows) found.set(row.id, toVersion<D>(row));
          return found;
        },
        () => found,
      );
    },

    async list<D>(collection: string, at: number, query: HistoryPageQuery): Promise<ListPage<D>> {
      const offset = pageBound(query.offset);
      const wanted = pageBound(query.limit);
      const none = (): ListPage<D> => ({ total: 0, docs: [] });
      if (at < 0) return none();
      if (query.facets !== undefined && query.facets.length === 0) return none();
      // The total and the rows from one snapshot (as the live board's). A page near the front is one
      // statement; deeper, or past the end, the total first and then the page walked from the nearer end.
      if (offset < NEAR_FRONT && wanted > 0) {
        const params: unknown[] = [collection, position(at), offset, wanted];
        const rows = await read(
          async (client) =>
            (await client.query<ReadRow & { total: number | string }>(sql.listFront(query.facets, params), params))
              .rows,
          () => [],
        );
        if (rows.length > 0) return { total: Number(rows[0]!.total), docs: rows.map((row) => toVersion<D>(row)) };
      }
      return inSnapshot(async (client) => {
        const total = await countAt(client, collection, at, query.facets);
        const limit = Math.max(0, Math.min(wanted, total - offset));
        if (limit === 0) return { total, docs: [] };
        const fromEnd = total - offset - limit;
        const ascending = fromEnd < offset;
        const params: unknown[] = [collection, position(at), ascending ? fromEnd : offset, limit];
        const rows = (await client.query<ReadRow>(sql.list(query.facets, ascending, params), params)).rows;
        if (ascending) rows.reverse();
        return { total, docs: rows.map((row) => toVersion<D>(row)) };
      }, none);
    },

    async count(collection, at, facets) {
      return read(
        (client) => countAt(client, collection, at, facets),
        () => 0,
      );
    },

    async scan<D>(collection: string, at: number, query: HistoryScanQuery) {
      const limit = pageBound(query.limit);
      if (at < 0 || limit === 0 || (query.facets !== undefined && query.facets.length === 0)) return [];
      const params: unknown[] = [collection, position(at), limit];
      if (query.after) params.push(query.after.sortKey, query.after.id);
      const text = sql.scan(query.facets, query.after !== undefined, params);
      return read(
        async (client) => (await client.query<ReadRow>(text, params)).rows.map((row) => toVersion<D>(row)),
        () => [],
      );
    },

    async changes<D>(collection: string, query: HistoryChangesQuery) {
      const limit = pageBound(query.limit);
      if (limit === 0) return [];
      const params: unknown[] = [collection, position(query.from), position(query.to), limit];
      if (query.after) params.push(query.after.seq, query.after.id);
      const rows = await read(
        async (client) =>
          (await client.query<Record<string, string | number | null>>(sql.changes(query.after !== undefined), params))
            .rows,
        () => [],
      );
      const side = (row: Record<string, string | number | null>, prefix: string): ReadRow => ({
        id: row[`${prefix}id`] as string,
        doc: row[`${prefix}doc`] as string,
        seq: row[`${prefix}seq`]!,
        written_at: row[`${prefix}written_at`] as string,
        sort_key: row[`${prefix}sort_key`] as string,
        facet: row[`${prefix}facet`] as string,
      });
      return rows.map((row): VersionChange<D> => ({
        after: toVersion<D>(side(row, 'a_')),
        before: row['b_id'] === null ? null : toVersion<D>(side(row, 'b_')),
      }));
    },
  };
}
