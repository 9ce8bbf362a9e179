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
 * Every read is an index range bounded on both sides, or a walk along an index bounded by its limit.
 */
import type pg from 'pg';
import {
  OPEN_END,
  type HistoryChangesQuery,
  type HistoryPageQuery,
  type HistoryScanQuery,
  type HistoryStore,
  type Version,
  type VersionChange,
  type VersionWrite,
  type WritePoint,
} from '../history/port.ts';
import { sharedOf, splitVersion, type SharedBefore } from '../history/shared-member.ts';
import type { DocWrite, ListPage } from '../port.ts';
import { storedFromTexts } from '../stored-doc.ts';
import { quoteIdent } from './postgres-pool.ts';

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
const count = (n: number): number => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('a page limit or offset must be a non-negative integer');
  return n;
};

/** The number of characters (code points, as PostgreSQL's text functions count them) in `text`'s first `bytes` UTF-8 bytes. */
function charsInBytes(text: string, bytes: number): number {
  let chars = 0;
  for (let i = 0, b = 0; b < bytes; chars++) {
    const c = text.codePointAt(i)!;
    b += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    i += c < 0x10000 ? 1 : 2;
  }
  return chars;
}

type ReadRow = { id: string; doc: string; seq: string; written_at: string; sort_key: string; facet: string };

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

/** A document's version as the model last has it (stored, or earlier in the commit being written). */
type Latest = { from: number; sortKey: string; facet: string; placed: number };
type NewVersion = {
  id: string;
  from: number;
  to: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  placed: number;
  doc: string;
  sharedFrom: number | null;
  sharedAt: number | null;
};
type NewPlacement = { id: string; from: number; to: number; sortKey: string; facet: string };

/** The history of one generation, in `schema` (the read store's), read through `pool`. */
export function createPostgresHistory(pool: pg.Pool, schema: string): PostgresHistory {
  const s = quoteIdent(schema);
  // Ordered and compared columns are byte-ordered, as the read store's own (postgres-schema.ts).
  const text = 'text COLLATE "C" NOT NULL';
  const VERSIONS = `${s}.history_versions`;
  const PLACEMENTS = `${s}.history_placements`;
  const COUNTS = `${s}.history_counts`;
  const FACETS = `${s}.history_facets`;
  const SHARED = `${s}.history_shared_texts`;
  const RECORDED = `${s}.history_recorded_from`;

  const TABLES = [
    `CREATE TABLE IF NOT EXISTS ${VERSIONS} (
      collection ${text},
      id ${text},
      valid_from bigint NOT NULL,
      valid_to bigint NOT NULL,
      written_at ${text},
      sort_key ${text},
      facet ${text},
      placed bigint NOT NULL,
      doc text NOT NULL,
      shared_from bigint,
      shared_at integer,
      PRIMARY KEY (collection, id, valid_from)
    )`,
    // Writes in (from, to] in delta order with their ends: a walk that passes overwritten ones as keys.
    `CREATE INDEX IF NOT EXISTS history_versions_delta ON ${VERSIONS} (collection, valid_from, id, valid_to)`,
    `CREATE TABLE IF NOT EXISTS ${PLACEMENTS} (
      collection ${text},
      id ${text},
      from_seq bigint NOT NULL,
      to_seq bigint NOT NULL,
      sort_key ${text},
      facet ${text},
      PRIMARY KEY (collection, id, from_seq)
    )`,
    `CREATE INDEX IF NOT EXISTS history_placements_listing ON ${PLACEMENTS} (collection, sort_key, id, from_seq, to_seq)`,
    `CREATE INDEX IF NOT EXISTS history_placements_facet ON ${PLACEMENTS} (collection, facet, sort_key, id, from_seq, to_seq)`,
    `CREATE TABLE IF NOT EXISTS ${COUNTS} (
      collection ${text},
      facet ${text},
      at_seq bigint NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (collection, facet, at_seq)
    )`,
    `CREATE TABLE IF NOT EXISTS ${FACETS} (collection ${text}, facet ${text}, PRIMARY KEY (collection, facet))`,
    `CREATE TABLE IF NOT EXISTS ${SHARED} (
      collection ${text},
      id ${text},
      valid_from bigint NOT NULL,
      text text NOT NULL,
      PRIMARY KEY (collection, id, valid_from)
    )`,
    `CREATE TABLE IF NOT EXISTS ${RECORDED} (collection ${text} PRIMARY KEY, position bigint NOT NULL)`,
  ];

  /** A version's whole text (`v` its row, `t` its shared text's, joined by `sharedJoin`). */
  const wholeText = (v: string, t: string) =>
    `CASE WHEN ${v}.shared_from IS NULL THEN ${v}.doc ELSE left(${v}.doc, ${v}.shared_at) || ${t}.text || substr(${v}.doc, ${v}.shared_at + 1) END`;
  const sharedJoin = (v: string, t: string) =>
    `LEFT JOIN ${SHARED} AS ${t} ON ${t}.collection = ${v}.collection AND ${t}.id = ${v}.id AND ${t}.valid_from = ${v}.shared_from`;
  const versionColumns = (v: string, t: string, prefix = '') =>
    `${v}.id AS ${prefix}id, ${wholeText(v, t)} AS ${prefix}doc, ${v}.valid_from AS ${prefix}seq, ${v}.written_at AS ${prefix}written_at, ${v}.sort_key AS ${prefix}sort_key, ${v}.facet AS ${prefix}facet`;
  /**
   * The version of document `idSql` valid at `atSql`: the last key at or before it in the primary key.
   * As a range of whole keys, which no other index can serve: before a table's first ANALYZE (a replay's
   * new generation) the planner may otherwise walk the delta index's whole collection for each probe.
   */
  const validAt = (collectionSql: string, idSql: string, atSql: string, current = false) =>
    `SELECT * FROM ${VERSIONS}
      WHERE (collection, id, valid_from) BETWEEN (${collectionSql}, ${idSql}, 0) AND (${collectionSql}, ${idSql}, ${atSql})
        ${current ? '' : `AND valid_to > ${atSql}`}
      ORDER BY collection DESC, id DESC, valid_from DESC LIMIT 1`;

  const queries = {
    /** $1 collection, $2 id, $3 at. */
    get: `SELECT ${versionColumns('v', 't')} FROM (${validAt('$1', '$2', '$3')}) AS v ${sharedJoin('v', 't')}`,
    /** $1 collection, $2 ids, $3 at. */
    getMany: `SELECT ${versionColumns('v', 't')} FROM unnest($2::text[]) AS wanted (id)
      CROSS JOIN LATERAL (${validAt('$1', 'wanted.id', '$3')}) AS v ${sharedJoin('v', 't')}`,
    /** $1 collection, $2 facets (null: every facet the collection had), $3 at. */
    count: `SELECT coalesce(sum(c.n), 0)::bigint AS n
      FROM (SELECT facet FROM ${FACETS} WHERE collection = $1 AND $2::text[] IS NULL
        UNION ALL SELECT DISTINCT facet FROM unnest($2::text[]) AS f (facet)) AS f
      CROSS JOIN LATERAL (SELECT n FROM ${COUNTS} WHERE collection = $1 AND facet = f.facet
        AND at_seq BETWEEN 0 AND $3 ORDER BY at_seq DESC LIMIT 1) AS c`,
    /** $1 collection, $2 seq. */
    pointAtSeq: `SELECT valid_from, written_at FROM ${VERSIONS} WHERE collection = $1 AND valid_from BETWEEN 0 AND $2
      ORDER BY valid_from DESC, id DESC LIMIT 1`,
    recordedFrom: `SELECT position FROM ${RECORDED} WHERE collection = $1`,
  };

  /**
   * The ids and sort keys of the placements valid at $2 (`at`) in collection $1, in listing order
   * (or its reverse), from parameter `next` on: one walk of the listing index, or of the facet index per
   * facet merged in order (a facet list in one scan would come unordered and need a sort of every row).
   */
  function placed(
    facets: readonly string[] | undefined,
    options: { ascending: boolean; after: boolean; bound: string; eachBound: string; params: unknown[] },
  ): string {
    const order = options.ascending ? 'ASC' : 'DESC';
    const params = options.params;
    // The keyset's two parameters are the last ones given; the facets' come after them.
    const keyset = options.after
      ? `AND (sort_key, id) ${options.ascending ? '>' : '<'} ($${params.length - 1}, $${params.length})`
      : '';
    const walk = (facet: string | null) => {
      let facetSql = '';
      if (facet !== null) {
        params.push(facet);
        facetSql = `AND facet = $${params.length}`;
      }
      return `SELECT id, sort_key FROM ${PLACEMENTS} WHERE collection = $1 ${facetSql}
        AND from_seq <= $2 AND to_seq > $2 ${keyset} ORDER BY sort_key ${order}, id ${order}`;
    };
    if (facets === undefined) return `${walk(null)} ${options.bound}`;
    const each = [...new Set(facets)].map((f) => `(${walk(f)} ${options.eachBound})`);
    return `SELECT id, sort_key FROM (${each.join(' UNION ALL ')}) AS merged ORDER BY sort_key ${order}, id ${order} ${options.bound}`;
  }

  /** The versions valid at $2 of the placements `placedSql` yields, in its order (`order` on p.sort_key, p.id). */
  const pageOf = (placedSql: string, order: 'ASC' | 'DESC') =>
    `SELECT ${versionColumns('v', 't')} FROM (${placedSql}) AS p
      CROSS JOIN LATERAL (${validAt('$1', 'p.id', '$2')}) AS v ${sharedJoin('v', 't')}
      ORDER BY p.sort_key ${order}, p.id ${order}`;

  async function countAt(
    client: pg.ClientBase | pg.Pool,
    collection: string,
    at: number,
    facets: readonly string[] | undefined,
  ): Promise<number> {
    if (at < 0 || (facets !== undefined && facets.length === 0)) return 0;
    const result = await client.query<{ n: string }>(queries.count, [collection, facets ?? null, position(at)]);
    return Number(result.rows[0]?.n ?? 0);
  }

  /** `work` in a REPEATABLE READ READ ONLY transaction on a connection of its own: its reads share one snapshot. */
  async function inSnapshot<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    // A connection whose rollback failed is in an unknown state: released with the error, the pool discards it.
    let discard: Error | undefined;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        discard = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    } finally {
      client.release(discard);
    }
  }

  return {
    async ensureTables(client) {
      const before = await client.query<{ all: boolean; versions: boolean; checkpoints: boolean }>(
        `SELECT bool_and(to_regclass(t) IS NOT NULL) AS all, bool_and(to_regclass(t) IS NOT NULL) FILTER (WHERE t = $2) AS versions,
          to_regclass($3) IS NOT NULL AS checkpoints FROM unnest($1::text[]) AS t`,
        [[VERSIONS, PLACEMENTS, COUNTS, FACETS, SHARED, RECORDED], VERSIONS, `${s}.checkpoints`],
      );
      const { all, versions, checkpoints } = before.rows[0]!;
      // Every table there (each open of an existing generation): no DDL, which would queue on the catalog.
      if (all) return;
      for (const sql of TABLES) await client.query(sql);
      if (versions || !checkpoints) return;
      // Tables made beside documents already written: their collections' history starts at their checkpoints.
      await client.query(
        `INSERT INTO ${RECORDED} (collection, position) SELECT collection, position FROM ${s}.checkpoints
          WHERE position > 0 ON CONFLICT DO NOTHING`,
      );
    },

    async write(client, collection, writes, previousCheckpoint) {
      const ordered: { id: string; w: DocWrite; v: VersionWrite }[] = [];
      // A write at or before the checkpoint is one the store already applied (and the model recorded, or
      // began after: recordedFrom): a batch committed again changes nothing.
      for (const w of writes)
        for (const v of w.versions ?? []) if (v.seq > previousCheckpoint) ordered.push({ id: w.id, w, v });
      if (ordered.length === 0) return;
      // Log order across documents (each document's own already come oldest first): the counts move in it.
      ordered.sort((a, b) => a.v.seq - b.v.seq);
      const ids = [...new Set(ordered.map((o) => o.id))];
      // One read: the batch's documents as the model last has them, and every facet's latest count.
      const read = await client.query<{
        kind: 'v' | 'c';
        id: string;
        valid_from: string | null;
        sort_key: string | null;
        facet: string;
        placed: string | null;
        shared_from: string | null;
        text: string | null;
        n: string | null;
      }>(
        `SELECT 'v' AS kind, wanted.id, v.valid_from, v.sort_key, v.facet, v.placed, v.shared_from, t.text, NULL::bigint AS n
          FROM unnest($2::text[]) AS wanted (id)
          CROSS JOIN LATERAL (${validAt('$1', 'wanted.id', String(OPEN_END), true)}) AS v
          ${sharedJoin('v', 't')}
        UNION ALL
        SELECT 'c', NULL, NULL, NULL, f.facet, NULL, NULL, NULL, c.n FROM ${FACETS} AS f
          CROSS JOIN LATERAL (SELECT n FROM ${COUNTS} WHERE collection = $1 AND facet = f.facet
            AND at_seq BETWEEN 0 AND ${OPEN_END} ORDER BY at_seq DESC LIMIT 1) AS c
          WHERE f.collection = $1`,
        [collection, ids],
      );
      const latest = new Map<string, Latest>();
      const sharedBefore = new Map<string, SharedBefore<number> | null>();
      const facetCounts = new Map<string, number>();
      for (const row of read.rows) {
        if (row.kind === 'c') {
          facetCounts.set(row.facet, Number(row.n));
          continue;
        }
        latest.set(row.id, {
          from: Number(row.valid_from),
          sortKey: row.sort_key!,
          facet: row.facet,
          placed: Number(row.placed),
        });
        if (row.shared_from !== null && row.text !== null)
          sharedBefore.set(row.id, { value: undefined, ref: Number(row.shared_from), text: row.text });
      }

      // What the commit writes: new rows (closed in place when a later write of the batch ends them) and closings of stored ones.
      const newVersions = new Map<string, NewVersion>();
      const closedVersions: { id: string; from: number; to: number }[] = [];
      const newPlacements = new Map<string, NewPlacement>();
      const closedPlacements: { id: string; from: number; to: number }[] = [];
      const newTexts: { id: string; from: number; text: string }[] = [];
      const counts = new Map<string, { facet: string; at: number; n: number }>();
      const move = (facet: string, at: number, by: 1 | -1) => {
        const n = (facetCounts.get(facet) ?? 0) + by;
        facetCounts.set(facet, n);
        counts.set(`${at} ${facet}`, { facet, at, n });
      };
      const key = (id: string, from: number) => `${from} ${id}`;

      for (const { id, w, v } of ordered) {
        const previous = latest.get(id);
        // A write already recorded (the same batch committed again) changes nothing.
        if (previous && previous.from >= v.seq) continue;
        if (previous) {
          const made = newVersions.get(key(id, previous.from));
          if (made) made.to = v.seq;
          else closedVersions.push({ id, from: previous.from, to: v.seq });
        }
        const stays = previous !== undefined && previous.sortKey === v.sortKey && previous.facet === v.facet;
        const placedFrom = stays ? previous.placed : v.seq;
        const before = sharedBefore.get(id) ?? null;
        const split = splitVersion(v, before, () => {
          // The live document is the batch's last version of it: its text is the one the live store wrote.
          const json = v.doc === w.doc ? (w.json ?? JSON.stringify(v.doc)) : JSON.stringify(v.doc);
          if (json === undefined) throw new TypeError(`document ${id} is not JSON`);
          return json;
        });
        const shared = sharedOf(split, before, (member) => {
          newTexts.push({ id, from: v.seq, text: member });
          return v.seq;
        });
        sharedBefore.set(id, shared);
        newVersions.set(key(id, v.seq), {
          id,
          from: v.seq,
          to: OPEN_END,
          writtenAt: v.writtenAt,
          sortKey: v.sortKey,
          facet: v.facet,
          placed: placedFrom,
          doc: split.doc,
          sharedFrom: shared === null ? null : shared.ref,
          sharedAt: shared === null || split.shared === null ? null : charsInBytes(split.doc, split.at),
        });
        latest.set(id, { from: v.seq, sortKey: v.sortKey, facet: v.facet, placed: placedFrom });
        if (stays) continue;
        // It moved in the listing (or appeared): a new placement, and the facets' counts follow.
        if (previous) {
          const made = newPlacements.get(key(id, previous.placed));
          if (made) made.to = v.seq;
          else closedPlacements.push({ id, from: previous.placed, to: v.seq });
          if (previous.facet !== v.facet) move(previous.facet, v.seq, -1);
        }
        if (!previous || previous.facet !== v.facet) move(v.facet, v.seq, 1);
        newPlacements.set(key(id, v.seq), { id, from: v.seq, to: OPEN_END, sortKey: v.sortKey, facet: v.facet });
      }
      if (newVersions.size === 0) return;

      const versions = [...newVersions.values()];
      const placements = [...newPlacements.values()];
      const countRows = [...counts.values()];
      // One statement: every row travels in arrays, each table written by one multi-row statement.
      await client.query(
        `WITH closed_versions AS (
          UPDATE ${VERSIONS} AS h SET valid_to = u.valid_to
            FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u (id, valid_from, valid_to)
            WHERE h.collection = $1 AND h.id = u.id AND h.valid_from = u.valid_from
        ), new_versions AS (
          INSERT INTO ${VERSIONS} (collection, id, valid_from, valid_to, written_at, sort_key, facet, placed, doc, shared_from, shared_at)
            SELECT $1, * FROM unnest($5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[], $10::text[],
              $11::bigint[], $12::text[], $13::bigint[], $14::integer[])
        ), closed_placements AS (
          UPDATE ${PLACEMENTS} AS h SET to_seq = u.to_seq
            FROM unnest($15::text[], $16::bigint[], $17::bigint[]) AS u (id, from_seq, to_seq)
            WHERE h.collection = $1 AND h.id = u.id AND h.from_seq = u.from_seq
        ), new_placements AS (
          INSERT INTO ${PLACEMENTS} (collection, id, from_seq, to_seq, sort_key, facet)
            SELECT $1, * FROM unnest($18::text[], $19::bigint[], $20::bigint[], $21::text[], $22::text[])
        ), new_texts AS (
          INSERT INTO ${SHARED} (collection, id, valid_from, text)
            SELECT $1, * FROM unnest($23::text[], $24::bigint[], $25::text[])
        ), new_counts AS (
          INSERT INTO ${COUNTS} (collection, facet, at_seq, n)
            SELECT $1, * FROM unnest($26::text[], $27::bigint[], $28::bigint[])
            ON CONFLICT (collection, facet, at_seq) DO UPDATE SET n = excluded.n
        ), new_facets AS (
          INSERT INTO ${FACETS} (collection, facet) SELECT DISTINCT $1, facet FROM unnest($26::text[]) AS f (facet)
            ON CONFLICT DO NOTHING
        )
        SELECT 1`,
        [
          collection,
          closedVersions.map((c) => c.id),
          closedVersions.map((c) => c.from),
          closedVersions.map((c) => c.to),
          versions.map((v) => v.id),
          versions.map((v) => v.from),
          versions.map((v) => v.to),
          versions.map((v) => v.writtenAt),
          versions.map((v) => v.sortKey),
          versions.map((v) => v.facet),
          versions.map((v) => v.placed),
          versions.map((v) => v.doc),
          versions.map((v) => v.sharedFrom),
          versions.map((v) => v.sharedAt),
          closedPlacements.map((c) => c.id),
          closedPlacements.map((c) => c.from),
          closedPlacements.map((c) => c.to),
          placements.map((p) => p.id),
          placements.map((p) => p.from),
          placements.map((p) => p.to),
          placements.map((p) => p.sortKey),
          placements.map((p) => p.facet),
          newTexts.map((t) => t.id),
          newTexts.map((t) => t.from),
          newTexts.map((t) => t.text),
          countRows.map((c) => c.facet),
          countRows.map((c) => c.at),
          countRows.map((c) => c.n),
        ],
      );
    },

    async clear(client) {
      await client.query(`TRUNCATE ${VERSIONS}, ${PLACEMENTS}, ${COUNTS}, ${FACETS}, ${SHARED}, ${RECORDED}`);
    },

    async recordedFrom(collection) {
      const result = await pool.query<{ position: string }>(queries.recordedFrom, [collection]);
      return Number(result.rows[0]?.position ?? 0);
    },

    async pointAtSeq(collection, seq): Promise<WritePoint | null> {
      if (seq < 0) return null;
      const result = await pool.query<{ valid_from: string; written_at: string }>(queries.pointAtSeq, [
        collection,
        position(seq),
      ]);
      const row = result.rows[0];
      return row ? { seq: Number(row.valid_from), writtenAt: row.written_at } : null;
    },

    async get<D>(collection: string, id: string, at: number) {
      if (at < 0) return null;
      const row = (await pool.query<ReadRow>(queries.get, [collection, id, position(at)])).rows[0];
      return row ? toVersion<D>(row) : null;
    },

    async getMany<D>(collection: string, ids: readonly string[], at: number) {
      const found = new Map<string, Version<D>>();
      if (at < 0 || ids.length === 0) return found;
      const result = await pool.query<ReadRow>(queries.getMany, [collection, [...new Set(ids)], position(at)]);
      for (const row of result.rows) found.set(row.id, toVersion<D>(row));
      return found;
    },

    async list<D>(collection: string, at: number, query: HistoryPageQuery): Promise<ListPage<D>> {
      const offset = count(query.offset);
      const wanted = count(query.limit);
      if (at < 0) return { total: 0, docs: [] };
      // The total and the rows from one snapshot (as the live board's), the page walked from the nearer end.
      return inSnapshot(async (client) => {
        const total = await countAt(client, collection, at, query.facets);
        const limit = Math.max(0, Math.min(wanted, total - offset));
        if (limit === 0) return { total, docs: [] };
        const fromEnd = total - offset - limit;
        const ascending = fromEnd < offset;
        const params: unknown[] = [collection, position(at), ascending ? fromEnd : offset, limit];
        const sql = pageOf(
          placed(query.facets, {
            ascending,
            after: false,
            bound: 'OFFSET $3 LIMIT $4',
            eachBound: 'LIMIT $3::bigint + $4::bigint',
            params,
          }),
          ascending ? 'ASC' : 'DESC',
        );
        const rows = (await client.query<ReadRow>(sql, params)).rows;
        if (ascending) rows.reverse();
        return { total, docs: rows.map((row) => toVersion<D>(row)) };
      });
    },

    async count(collection, at, facets) {
      return countAt(pool, collection, at, facets);
    },

    async scan<D>(collection: string, at: number, query: HistoryScanQuery) {
      const limit = count(query.limit);
      if (at < 0 || limit === 0 || (query.facets !== undefined && query.facets.length === 0)) return [];
      const params: unknown[] = [collection, position(at), limit];
      if (query.after) params.push(query.after.sortKey, query.after.id);
      const sql = pageOf(
        placed(query.facets, {
          ascending: false,
          after: query.after !== undefined,
          bound: 'LIMIT $3',
          eachBound: 'LIMIT $3',
          params,
        }),
        'DESC',
      );
      return (await pool.query<ReadRow>(sql, params)).rows.map((row) => toVersion<D>(row));
    },

    async changes<D>(collection: string, query: HistoryChangesQuery) {
      const limit = count(query.limit);
      if (limit === 0) return [];
      const params: unknown[] = [collection, position(query.from), position(query.to), limit];
      if (query.after) params.push(query.after.seq, query.after.id);
      // Versions valid at `to` written after `from`, walked as keys of the delta index (overwritten ones
      // passed over there), each with the version valid at `from`; those whose text is the same at both
      // points are left out (two versions of one text are split alike, so their parts compare).
      const sql = `SELECT ${versionColumns('a', 'ta', 'a_')}, ${versionColumns('b', 'tb', 'b_')}
        FROM (SELECT id, valid_from FROM ${VERSIONS} WHERE collection = $1 AND valid_from > $2 AND valid_from <= $3
          AND valid_to > $3 ${query.after ? 'AND (valid_from, id) > ($5, $6)' : ''}) AS k
        CROSS JOIN LATERAL (SELECT * FROM ${VERSIONS} WHERE collection = $1 AND id = k.id AND valid_from = k.valid_from
          LIMIT 1) AS a
        LEFT JOIN LATERAL (${validAt('$1', 'k.id', '$2')}) AS b ON true
        ${sharedJoin('a', 'ta')} ${sharedJoin('b', 'tb')}
        WHERE b.id IS NULL OR CASE WHEN (a.shared_from IS NULL) = (b.shared_from IS NULL)
          THEN a.doc <> b.doc OR a.shared_at IS DISTINCT FROM b.shared_at OR (a.shared_from <> b.shared_from AND ta.text <> tb.text)
          ELSE ${wholeText('a', 'ta')} <> ${wholeText('b', 'tb')} END
        ORDER BY k.valid_from, k.id LIMIT $4`;
      const rows = (await pool.query<Record<string, string | null>>(sql, params)).rows;
      const side = (row: Record<string, string | null>, prefix: string): ReadRow => ({
        id: row[`${prefix}id`]!,
        doc: row[`${prefix}doc`]!,
        seq: row[`${prefix}seq`]!,
        written_at: row[`${prefix}written_at`]!,
        sort_key: row[`${prefix}sort_key`]!,
        facet: row[`${prefix}facet`]!,
      });
      return rows.map((row): VersionChange<D> => ({
        after: toVersion<D>(side(row, 'a_')),
        before: row['b_id'] === null ? null : toVersion<D>(side(row, 'b_')),
      }));
    },
  };
}
