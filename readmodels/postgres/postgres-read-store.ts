/**
 * The ReadStore port on PostgreSQL, through `pg`. One generation's tables live in schema
 * `pulseboard_g<N>` (postgres-schema.ts), made by the store's first call; the documents are the served
 * JSON text exactly as the projector serialised it (a `text` column: `jsonb` would not give the same
 * bytes back), `utf8` made from it when asked.
 *
 * Reads are index ranges bounded on both sides: the listing on (collection, [facet,] sort_key, id), the
 * delta on (collection, [facet,] seq, id), lookups on doc_keys' primary key (collection, key, value,
 * id). A read of several facets merges one range per facet (UNION ALL of ordered, limited branches),
 * so it never sorts a facet's whole range. Totals come from per-facet counters, and a board page by
 * number starts at the edge of its listing chunk (readmodels/list-chunks.ts), so a deep page costs the
 * chunk rows and at most one chunk's index keys; page and total are read in one REPEATABLE READ snapshot.
 * Commits: postgres-commit.ts.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { DeltaQuery, KeysetQuery, ListPage, ListQuery, ReadStore, StoredDoc } from '../port.ts';
import { storedFromTexts } from '../stored-doc.ts';
import { commitOn, commitRows, type Fence } from './postgres-commit.ts';
import { namedPostgresError } from './postgres-faults.ts';
import { createPostgresHistory, type PostgresHistory } from './postgres-history.ts';
import { consultsChunks } from '../list-chunks.ts';
import { settleBuild } from './postgres-build-settle.ts';
import { createPool, quoteIdent, withClient } from './postgres-pool.ts';
import { GENERATION_TABLES, generationSchema, generationTables, runDdl } from './postgres-schema.ts';

/** What listings read: everything but the projector-private state. */
const LISTED = ['id', 'doc', 'seq', 'written_at', 'sort_key', 'facet', 'keys'];
const listed = (prefix = '') => LISTED.map((c) => `${prefix}${c}`).join(', ');

type DocRow = {
  id: string;
  doc: string;
  seq: number;
  written_at: string;
  sort_key: string;
  facet: string;
  keys: string;
  state?: string;
};

function toStored<D, S>(row: DocRow): StoredDoc<D, S> {
  return storedFromTexts<D, S>({
    id: row.id,
    doc: row.doc,
    state: row.state,
    seq: row.seq,
    writtenAt: row.written_at,
    sortKey: row.sort_key,
    facet: row.facet,
    keys: row.keys,
  });
}

/**
 * A statement prepared once per connection under a name made from its text: a read's plan is made
 * once, not at every call (a page of several facets takes longer to plan than to run). Texts vary only
 * by the shape of the query (facets, bounds), never by values, so a connection keeps a few dozen.
 */
function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= 1_000) statementNames.clear();
    name = `pb_${createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}
/** Each text's name, hashed once rather than per query (a few dozen texts a generation; bounded all the same). */
const statementNames = new Map<string, string>();

type Params = { values: unknown[]; add(value: unknown): string };

/** Bound parameters as they are added: `add` answers the placeholder. */
function params() {
  const values: unknown[] = [];
  return { values, add: (value: unknown) => `$${values.push(value)}` };
}

const limitOf = (n: number): number => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('a page limit must be a non-negative integer');
  return n;
};

type Page = {
  /** The listing (sort_key, id) or the delta (seq, id) order. */
  order: 'listing' | 'delta';
  direction: 'ASC' | 'DESC';
  facets: readonly string[] | undefined;
  /** Conditions after the collection (and facet), each starting with AND, over placeholders of `p`. */
  where: string;
  skip: number;
  limit: number;
};

/**
 * A page of documents in one order, from the index of that order (per facet when filtered). Several
 * facets: one limited range per facet, merged. Rows to skip are skipped on index keys alone, and only
 * the page's rows are read whole.
 */
function pageSql(s: string, p: Params, collection: string, page: Page): string {
  const first = page.order === 'listing' ? 'sort_key' : 'seq';
  const sort = `${first} ${page.direction}, id ${page.direction}`;
  const c = p.add(collection);
  const facets = page.facets === undefined ? [undefined] : [...new Set(page.facets)];
  const limit = p.add(limitOf(page.limit));
  const branch = (facet: string | undefined, columns: string, where: string, take: string, skip = '') =>
    `SELECT ${columns} FROM ${s}.docs WHERE collection = ${c}${facet === undefined ? '' : ` AND facet = ${p.add(facet)}`} ${where}
     ORDER BY ${sort}${skip} LIMIT ${take}`;
  const merged = (columns: string, where: string, take: string, skip = '') =>
    facets.length === 1
      ? branch(facets[0], columns, where, take, skip)
      : `SELECT * FROM (${facets.map((f) => `(${branch(f, columns, where, skip === '' ? take : p.add(page.skip + 1))})`).join(' UNION ALL ')}) u
         ORDER BY ${sort}${skip} LIMIT ${take}`;
  if (page.skip === 0) return merged(listed(), page.where, limit);
  // The skipped rows are walked on index keys alone (an index-only scan) to the page's first row; the page
  // is then one range of the same index from that row, read like a first page.
  const from = merged(`${first}, id`, page.where, '1', ` OFFSET ${p.add(page.skip)}`);
  const fromRow = `AND (${first}, id) ${page.direction === 'DESC' ? '<=' : '>='} (f.${first}, f.id)`;
  return `SELECT r.* FROM (${from}) f CROSS JOIN LATERAL (${merged(listed(), fromRow, limit)}) r`;
}

/**
 * A board page past the front, total included, in one statement (one snapshot): the chunks newest first
 * with the rows each closes (a window sum), the chunk the offset falls in, the page's first row by a
 * walk up from that chunk's start on index keys alone (at most one chunk's rows), and the page as one
 * range of the listing down from that row. Columns: total, then the page's (none past the end).
 */
function deepPageSql(
  s: string,
  p: Params,
  collection: string,
  facets: readonly string[] | undefined,
  offset: number,
  limit: number,
): string {
  const c = p.add(collection);
  const o = p.add(offset);
  const each = facets === undefined ? [undefined] : facets;
  const range = (facet: string | undefined, columns: string, where: string, direction: string, tail: string) =>
    `SELECT ${columns} FROM ${s}.docs WHERE collection = ${c}${facet === undefined ? '' : ` AND facet = ${p.add(facet)}`} ${where}
     ORDER BY sort_key ${direction}, id ${direction} ${tail}`;
  const merged = (columns: string, where: string, direction: string, take: string, skip: string) =>
    each.length === 1
      ? range(each[0], columns, where, direction, `OFFSET ${skip} LIMIT ${take}`)
      : `SELECT * FROM (${each.map((f) => `(${range(f, columns, where, direction, `LIMIT ${skip} + ${take}`)})`).join(' UNION ALL ')}) u
         ORDER BY sort_key ${direction}, id ${direction} OFFSET ${skip} LIMIT ${take}`;
  const first = merged('sort_key, id', 'AND (sort_key, id) >= (at.start_key, at.start_id)', 'ASC', '1', 'at.skip');
  const page = merged(listed(), 'AND (sort_key, id) <= (f.sort_key, f.id)', 'DESC', p.add(limitOf(limit)), '0');
  return `WITH t AS (${countSql(s, p, collection, facets)}),
    c AS (SELECT start_key, start_id, n, SUM(n) OVER (ORDER BY start_key DESC, start_id DESC ROWS UNBOUNDED PRECEDING) AS upto
          FROM (${chunksSql(s, p, collection, facets)}) x),
    at AS (SELECT start_key, start_id, upto - 1 - ${o} AS skip FROM c WHERE upto > ${o} ORDER BY start_key DESC, start_id DESC LIMIT 1)
    SELECT t.n AS total, r.* FROM t LEFT JOIN (
      at CROSS JOIN LATERAL (SELECT pg.* FROM (${first}) f CROSS JOIN LATERAL (${page}) pg) r
    ) ON true
    ORDER BY r.sort_key DESC, r.id DESC`;
}

/** A listing's total from the per-facet counters (`n`). */
function countSql(s: string, p: Params, collection: string, facets: readonly string[] | undefined): string {
  return `SELECT COALESCE(SUM(n), 0)::bigint AS n FROM ${s}.doc_counts WHERE collection = ${p.add(collection)}${inFacets(p, facets)}`;
}

/** The listing's chunks (readmodels/list-chunks.ts), each with its rows in the facets (`n`); ~250 small rows at 1M documents. */
function chunksSql(s: string, p: Params, collection: string, facets: readonly string[] | undefined): string {
  const c = p.add(collection);
  if (facets === undefined)
    return `SELECT start_key, start_id, total AS n FROM ${s}.list_chunks WHERE collection = ${c}`;
  return `SELECT start_key, start_id, SUM(n)::bigint AS n FROM ${s}.list_chunk_facets
          WHERE collection = ${c}${inFacets(p, facets)} GROUP BY start_key, start_id`;
}

const inFacets = (p: Params, facets: readonly string[] | undefined): string =>
  facets === undefined ? '' : ` AND facet IN (${facets.map((f) => p.add(f)).join(', ')})`;

/** The read queries as the store builds them, for test/readmodels/postgres-query-plans.test.ts (EXPLAIN of the very texts). */
export const postgresQueries = { params, pageSql, deepPageSql };

export type PostgresStoreOptions = {
  /** Whether `close` ends the pool (a store of its own) or leaves it to the space. */
  ownsPool: boolean;
  /** A replay's new generation: commits skip the WAL flush, which `close` then waits for once. */
  build?: boolean;
  /** The replay lock this build writes under: every commit checks it is still held (postgres-commit.ts). */
  fence?: Fence;
};

/** The read store of generation 0 with a pool of its own (tests, tools); serving goes through the generation space. */
export function createPostgresReadStore(url: string): ReadStore {
  return postgresReadStoreOn(createPool(url), 0, { ownsPool: true });
}

/** The read store of one generation over `pool`. */
export function postgresReadStoreOn(pool: pg.Pool, generation: number, options: PostgresStoreOptions): ReadStore {
  const schema = generationSchema(generation);
  const s = quoteIdent(schema);
  const history: PostgresHistory = createPostgresHistory(pool, schema);
  let closed = false;
  let ready: Promise<void> | undefined;
  let wrote = false;

  /** The generation's tables, made on the first call (a generation is created by its first use). */
  function ensure(): Promise<void> {
    if (closed) return Promise.reject(new Error(`the PostgreSQL read store of ${schema} is closed`));
    ready ??= withClient(
      pool,
      async (client) => {
        const made = await client.query<{ made: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS made`, [
          `${s}.list_chunk_facets`,
        ]);
        // Under the DDL lock either way: two processes making the same tables at once would collide.
        const ddl = made.rows[0]?.made ? 'SELECT 1' : generationTables(schema);
        await runDdl(client, ddl, () => history.ensureTables(client));
      },
      (client) => client.query('ROLLBACK'),
    );
    ready.catch(() => {
      ready = undefined;
    });
    return ready;
  }

  async function rowsOf<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    await ensure();
    return withClient(pool, async (client) => (await client.query<R>(prepared(text, values))).rows);
  }

  /**
   * Every checkpoint, read by one statement and kept for the event-loop turn its answer arrived in (as
   * the SQLite store does): a request's first read is `fresh` (its key's checkpoint) and queries, and the
   * reads after it in the turn (the page's version and bound) are answered without a round trip. Reads
   * issued together share one statement; this store's own commits drop what was kept.
   */
  let kept: Map<string, number> | null = null;
  let reading: Promise<Map<string, number>> | null = null;
  let commits = 0;
  const endTurn = () => {
    kept = null;
    reading = null;
  };
  function allCheckpoints(fresh: boolean): Promise<Map<string, number>> {
    if (!fresh && kept) return Promise.resolve(kept);
    if (!fresh && reading) return reading;
    const since = commits;
    const read = rowsOf<{ collection: string; position: number }>(
      `SELECT collection, position FROM ${s}.checkpoints`,
      [],
    ).then((rows) => {
      const positions = new Map(rows.map((row) => [row.collection, row.position]));
      if (since === commits) {
        kept = positions;
        setImmediate(endTurn).unref();
      }
      return positions;
    });
    reading = read;
    setImmediate(() => {
      if (reading === read) reading = null;
    }).unref();
    return read;
  }

  async function count(collection: string, facets: readonly string[] | undefined): Promise<number> {
    if (facets !== undefined && facets.length === 0) return 0;
    const p = params();
    const rows = await rowsOf<{ n: number }>(countSql(s, p, collection, facets), p.values);
    return rows[0]?.n ?? 0;
  }

  return {
    history,

    async checkpoint(collection, options) {
      return (await allCheckpoints(options?.fresh === true)).get(collection) ?? 0;
    },

    async commit(collection, writes, checkpoint, expected) {
      // Serialised first: a document that is not JSON fails the commit before anything is written.
      const rows = commitRows(writes);
      await ensure();
      wrote = true;
      // Nothing read while the commit runs is kept: it may not show the commit.
      const forget = () => {
        endTurn();
        commits += 1;
      };
      forget();
      try {
        return await withClient(
          pool,
          (client) =>
            commitOn(
              client,
              {
                schema,
                generation,
                collection,
                checkpoint,
                expected,
                history,
                fence: options.fence,
                build: options.build ?? false,
              },
              writes,
              rows,
            ),
          (client) => client.query('ROLLBACK'),
        );
      } catch (error) {
        throw namedPostgresError(error);
      } finally {
        forget();
      }
    },

    async get<D, S>(collection: string, id: string) {
      const rows = await rowsOf<DocRow>(`SELECT ${listed()}, state FROM ${s}.docs WHERE collection = $1 AND id = $2`, [
        collection,
        id,
      ]);
      return rows[0] ? toStored<D, S>(rows[0]) : null;
    },

    async getMany<D, S>(collection: string, ids: readonly string[]) {
      const found = new Map<string, StoredDoc<D, S>>();
      if (ids.length === 0) return found;
      const rows = await rowsOf<DocRow>(
        `SELECT ${listed()}, state FROM ${s}.docs WHERE collection = $1 AND id = ANY($2::text[])`,
        [collection, [...new Set(ids)]],
      );
      for (const row of rows) found.set(row.id, toStored<D, S>(row));
      return found;
    },

    async findIds(collection, key, value, limit) {
      const rows = await rowsOf<{ id: string }>(
        `SELECT id FROM ${s}.doc_keys WHERE collection = $1 AND key = $2 AND value = $3 ORDER BY id LIMIT $4`,
        [collection, key, value, limitOf(limit)],
      );
      return rows.map((row) => row.id);
    },

    async findDocs<D, S>(collection: string, key: string, value: string, limit: number) {
      // One statement: each document holds the value as it is read.
      const rows = await rowsOf<DocRow>(
        `SELECT ${listed('d.')}, d.state FROM ${s}.doc_keys k JOIN ${s}.docs d ON d.collection = k.collection AND d.id = k.id
         WHERE k.collection = $1 AND k.key = $2 AND k.value = $3 ORDER BY k.id LIMIT $4`,
        [collection, key, value, limitOf(limit)],
      );
      return rows.map((row) => toStored<D, S>(row));
    },

    async findIdsMany(collection, key, values, limit) {
      const found = new Map<string, string[]>();
      if (values.length === 0 || limit <= 0) return found;
      // Per value, the first `limit` ids of its index range.
      const rows = await rowsOf<{ value: string; id: string }>(
        `SELECT v.value, k.id FROM unnest($3::text[]) AS v(value) CROSS JOIN LATERAL (
           SELECT id FROM ${s}.doc_keys WHERE collection = $1 AND key = $2 AND value = v.value ORDER BY id LIMIT $4
         ) k ORDER BY v.value, k.id`,
        [collection, key, [...new Set(values)], limitOf(limit)],
      );
      for (const row of rows) {
        const ids = found.get(row.value);
        if (ids) ids.push(row.id);
        else found.set(row.value, [row.id]);
      }
      return found;
    },

    async findKeysByPrefix(collection, key, prefix, limit) {
      // A range of doc_keys' primary key: from the prefix up to the prefix followed by the highest code point.
      const rows = await rowsOf<{ value: string; id: string }>(
        `SELECT value, id FROM ${s}.doc_keys WHERE collection = $1 AND key = $2 AND value >= $3 AND value < $4
         ORDER BY value, id LIMIT $5`,
        [collection, key, prefix, `${prefix}\u{10FFFF}`, limitOf(limit)],
      );
      return rows.map((row) => ({ value: row.value, id: row.id }));
    },

    async list<D>(collection: string, query: ListQuery): Promise<ListPage<D>> {
      await ensure();
      const facets = query.facets === undefined ? undefined : [...new Set(query.facets)];
      if (facets !== undefined && facets.length === 0) return { total: 0, docs: [] };
      const offset = limitOf(query.offset);
      const limit = limitOf(query.limit);
      if (!consultsChunks(offset)) {
        // A page near the front is walked from it: the total and the page in one statement, one snapshot.
        const p = params();
        const page = pageSql(s, p, collection, {
          order: 'listing',
          direction: 'DESC',
          facets,
          where: '',
          skip: offset,
          limit,
        });
        const rows = await rowsOf<DocRow & { total: number }>(
          `WITH t AS (${countSql(s, p, collection, facets)}) SELECT t.n AS total, p.* FROM t LEFT JOIN LATERAL (${page}) p ON true
           ORDER BY p.sort_key DESC, p.id DESC`,
          p.values,
        );
        return {
          total: rows[0]?.total ?? 0,
          docs: rows.filter((row) => row.id !== null).map((row) => toStored<D, unknown>(row)),
        };
      }
      // Deeper: from the edge of the page's listing chunk (readmodels/list-chunks.ts), in one statement.
      const p = params();
      const rows = await rowsOf<DocRow & { total: number }>(
        deepPageSql(s, p, collection, facets, offset, limit),
        p.values,
      );
      return {
        total: rows[0]?.total ?? 0,
        docs: rows.filter((row) => row.id !== null).map((row) => toStored<D, unknown>(row)),
      };
    },

    async count(collection, facets) {
      return count(collection, facets);
    },

    async listKeyset<D>(collection: string, query: KeysetQuery) {
      if (query.limit <= 0 || (query.facets !== undefined && query.facets.length === 0)) return [];
      const p = params();
      const where = query.before
        ? `AND (sort_key, id) < (${p.add(query.before.sortKey)}, ${p.add(query.before.id)})`
        : '';
      const text = pageSql(s, p, collection, {
        order: 'listing',
        direction: 'DESC',
        facets: query.facets,
        where,
        skip: 0,
        limit: query.limit,
      });
      return (await rowsOf<DocRow>(text, p.values)).map((row) => toStored<D, unknown>(row));
    },

    async delta<D>(collection: string, query: DeltaQuery) {
      if (query.limit <= 0 || (query.facets !== undefined && query.facets.length === 0)) return [];
      const p = params();
      let where: string;
      if ('after' in query.start) {
        // Both bounds on seq: every page is an index range starting at the cursor, at any depth.
        const { seq, id } = query.start.after;
        where = `AND (seq, id) > (${p.add(seq)}, ${p.add(id)}) AND seq <= ${p.add(query.upToSeq)}`;
      } else {
        // writtenAt never decreases with seq (both come from the log): a time maps to a first seq.
        const first = await rowsOf<{ seq: number }>(
          `SELECT seq FROM ${s}.docs WHERE collection = $1 AND written_at >= $2 ORDER BY written_at, seq LIMIT 1`,
          [collection, query.start.fromWrittenAt],
        );
        if (!first[0]) return [];
        where = `AND seq >= ${p.add(first[0].seq)} AND seq <= ${p.add(query.upToSeq)}`;
      }
      const text = pageSql(s, p, collection, {
        order: 'delta',
        direction: 'ASC',
        facets: query.facets,
        where,
        skip: 0,
        limit: query.limit,
      });
      return (await rowsOf<DocRow>(text, p.values)).map((row) => toStored<D, unknown>(row));
    },

    async clear() {
      await ensure();
      endTurn();
      commits += 1;
      await withClient(
        pool,
        async (client) => {
          await client.query('BEGIN');
          await client.query(`TRUNCATE ${GENERATION_TABLES.map((t) => `${s}.${t}`).join(', ')}`);
          await history.clear(client);
          await client.query('COMMIT');
        },
        (client) => client.query('ROLLBACK'),
      );
    },

    async close() {
      if (closed) return;
      // A build's commits skipped the WAL flush, and its tables were never planned: settled before it serves.
      if (options.build && wrote && ready)
        await withClient(pool, (client) => settleBuild(client, schema)).catch(() => {});
      closed = true;
      if (options.ownsPool) await pool.end();
    },
  };
}
