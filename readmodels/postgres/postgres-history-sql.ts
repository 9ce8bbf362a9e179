/**
 * The PostgreSQL history's tables and statements (postgres-history.ts), for one generation's schema.
 * Every read is an index range bounded on both sides, or a walk along an index bounded by its limit;
 * test/contract/history.postgres.test.ts checks the plans PostgreSQL makes of them.
 */
import { OPEN_END } from '../history/port.ts';
import { splitTexts } from './postgres-joined-texts.ts';
import { quoteIdent } from './postgres-pool.ts';

/** The history's statements in `schema`; `$n` placeholders as each one's comment says. */
export function historySql(schema: string) {
  const s = quoteIdent(schema);
  // Ordered and compared columns are byte-ordered, as the read store's own (postgres-schema.ts).
  const text = 'text COLLATE "C" NOT NULL';
  const tables = {
    versions: `${s}.history_versions`,
    placements: `${s}.history_placements`,
    counts: `${s}.history_counts`,
    facets: `${s}.history_facets`,
    shared: `${s}.history_shared_texts`,
    recorded: `${s}.history_recorded_from`,
  };
  const { versions: VERSIONS, placements: PLACEMENTS, counts: COUNTS, facets: FACETS, shared: SHARED } = tables;

  /** Small columns first, the document's text last. */
  const ddl = [
    `CREATE TABLE IF NOT EXISTS ${VERSIONS} (
      collection ${text},
      id ${text},
      valid_from bigint NOT NULL,
      valid_to bigint NOT NULL,
      written_at ${text},
      sort_key ${text},
      facet ${text},
      placed bigint NOT NULL,
      shared_from bigint,
      shared_at integer,
      doc text NOT NULL,
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
    // The listing as of P, walked as keys (the ranges tested in the index, rows never fetched).
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
    `CREATE TABLE IF NOT EXISTS ${tables.recorded} (collection ${text} PRIMARY KEY, position bigint NOT NULL)`,
  ];

  /** A version's whole text (`v` its row, `t` its shared text's, joined by `sharedJoin`). */
  const wholeText = (v: string, t: string) =>
    `CASE WHEN ${v}.shared_from IS NULL THEN ${v}.doc ELSE left(${v}.doc, ${v}.shared_at) || ${t}.text || substr(${v}.doc, ${v}.shared_at + 1) END`;
  /** A probe of the shared texts' key per version (a join the planner could make a scan of every text). */
  const sharedJoin = (v: string, t: string) =>
    `LEFT JOIN LATERAL (SELECT text FROM ${SHARED} WHERE collection = ${v}.collection AND id = ${v}.id
      AND valid_from = ${v}.shared_from LIMIT 1) AS ${t} ON true`;
  const versionColumns = (v: string, t: string, prefix = '') =>
    `${v}.id AS ${prefix}id, ${wholeText(v, t)} AS ${prefix}doc, ${v}.valid_from AS ${prefix}seq, ${v}.written_at AS ${prefix}written_at, ${v}.sort_key AS ${prefix}sort_key, ${v}.facet AS ${prefix}facet`;
  /**
   * The version of document `id` valid at `at` (or its latest, `current`): the last key at or before
   * (collection, id, at) of the primary key. Equalities, not a row comparison: PostgreSQL 15 does not end a
   * backward walk bounded by a row when a key fails it past its first column, so a document without a
   * version walked the rest of its collection (test/contract/history.postgres.test.ts counts the blocks).
   */
  const validAt = (collection: string, id: string, at: string, current = false) =>
    `SELECT * FROM ${VERSIONS}
      WHERE collection = ${collection} AND id = ${id} AND valid_from BETWEEN 0 AND ${at}
        ${current ? '' : `AND valid_to > ${at}`}
      ORDER BY collection DESC, id DESC, valid_from DESC LIMIT 1`;

  /**
   * The ids and sort keys of the placements valid at $2 in collection $1, in listing order (or its
   * reverse): one walk of the listing index, or one of the facet index per facet merged in order (facets
   * in one scan would come unordered, to be sorted whole). `params` holds $1…; the facets are added to
   * it; with `after`, its last two are the keyset's sort key and id.
   */
  function placed(
    facets: readonly string[] | undefined,
    options: { ascending: boolean; after: boolean; bound: string; eachBound: string; params: unknown[] },
  ): string {
    const order = options.ascending ? 'ASC' : 'DESC';
    const params = options.params;
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

  /** Documents valid at `at` in `facets` (a text[], null for every facet the collection had): one probe per facet. */
  const countAt = (collection: string, facets: string, at: string) => `SELECT coalesce(sum(c.n), 0)::bigint AS n
      FROM (SELECT facet FROM ${FACETS} WHERE collection = ${collection} AND ${facets}::text[] IS NULL
        UNION ALL SELECT DISTINCT facet FROM unnest(${facets}::text[]) AS f (facet)) AS f
      CROSS JOIN LATERAL (SELECT n FROM ${COUNTS} WHERE collection = ${collection} AND facet = f.facet
        AND at_seq BETWEEN 0 AND ${at} ORDER BY at_seq DESC LIMIT 1) AS c`;

  /**
   * The rows of `table` in collection $1 a commit closes (keys in `ids` and `froms`), each with its new end
   * (`tos`), found by one probe of the primary key each (a LIMIT the planner cannot flatten into a join):
   * a generation never analysed made a join of them a hash of every row of the collection, at every commit.
   */
  const probed = (table: string, from: string, to: string, ids: string, froms: string, tos: string) =>
    `SELECT k.ctid AS row, u.${to} FROM unnest(${ids}::text[], ${froms}::bigint[], ${tos}::bigint[]) AS u (id, ${from}, ${to})
      CROSS JOIN LATERAL (SELECT ctid FROM ${table} WHERE collection = $1 AND id = u.id AND ${from} = u.${from} LIMIT 1) AS k`;

  /** The versions valid at $2 of the placements `placedSql` yields, in its order. */
  const pageOf = (placedSql: string, ascending: boolean) =>
    // The placement's id and sort key (the version's own): what the page is ordered by, known sorted to an outer query.
    `SELECT p.id, ${wholeText('v', 't')} AS doc, v.valid_from AS seq, v.written_at, p.sort_key, v.facet
      FROM (${placedSql}) AS p
      CROSS JOIN LATERAL (${validAt('$1', 'p.id', '$2')}) AS v ${sharedJoin('v', 't')}
      ORDER BY p.sort_key ${ascending ? 'ASC' : 'DESC'}, p.id ${ascending ? 'ASC' : 'DESC'}`;

  return {
    tables,
    ddl,
    /** The read store's checkpoints (postgres-schema.ts), which the history starts from when made beside them. */
    storeCheckpoints: `${s}.checkpoints`,
    /** $1 tables' names; $2 the versions'; $3 the store's checkpoints. */
    existing: `SELECT bool_and(to_regclass(t) IS NOT NULL) AS all,
        bool_and(to_regclass(t) IS NOT NULL) FILTER (WHERE t = $2) AS versions,
        to_regclass($3) IS NOT NULL AS checkpoints
      FROM unnest($1::text[]) AS t`,
    /** Tables made beside documents already written: their collections' history starts at their checkpoints. */
    recordFromCheckpoints: `INSERT INTO ${tables.recorded} (collection, position)
      SELECT collection, position FROM ${s}.checkpoints WHERE position > 0 ON CONFLICT DO NOTHING`,
    clear: `TRUNCATE ${Object.values(tables).join(', ')}`,

    /** $1 collection, $2 id, $3 at. */
    get: `SELECT ${versionColumns('v', 't')} FROM (${validAt('$1', '$2', '$3')}) AS v ${sharedJoin('v', 't')}`,
    /** $1 collection, $2 ids, $3 at. */
    getMany: `SELECT ${versionColumns('v', 't')} FROM unnest($2::text[]) AS wanted (id)
      CROSS JOIN LATERAL (${validAt('$1', 'wanted.id', '$3')}) AS v ${sharedJoin('v', 't')}`,
    /** $1 collection, $2 facets (null: every facet the collection had), $3 at. One probe per facet. */
    count: countAt('$1', '$2', '$3'),
    /** $1 collection, $2 seq. */
    pointAtSeq: `SELECT valid_from, written_at FROM ${VERSIONS} WHERE collection = $1 AND valid_from BETWEEN 0 AND $2
      ORDER BY valid_from DESC, id DESC LIMIT 1`,
    /** $1 collection. */
    recordedFrom: `SELECT position FROM ${tables.recorded} WHERE collection = $1`,
    /** $1 collection, $2 at, $3 offset, $4 limit, then the facets. */
    list: (facets: readonly string[] | undefined, ascending: boolean, params: unknown[]) =>
      pageOf(
        placed(facets, {
          ascending,
          after: false,
          bound: 'OFFSET $3 LIMIT $4',
          eachBound: 'LIMIT $3::bigint + $4::bigint',
          params,
        }),
        ascending,
      ),
    /**
     * $1 collection, $2 at, $3 offset, $4 limit, then the facets, then the facets as a text[] (or null).
     * A page walked from the front with the total beside each row: one statement, so one snapshot.
     */
    listFront: (facets: readonly string[] | undefined, params: unknown[]) => {
      const page = placed(facets, {
        ascending: false,
        after: false,
        bound: 'OFFSET $3 LIMIT $4',
        eachBound: 'LIMIT $3::bigint + $4::bigint',
        params,
      });
      params.push(facets === undefined ? null : [...new Set(facets)]);
      return `SELECT page.*, total.n AS total FROM (${pageOf(page, false)}) AS page
        CROSS JOIN (${countAt('$1', `$${params.length}`, '$2')}) AS total
        ORDER BY page.sort_key DESC, page.id DESC`;
    },
    /** $1 collection, $2 at, $3 limit, [$4 sort key, $5 id when `after`], then the facets. */
    scan: (facets: readonly string[] | undefined, after: boolean, params: unknown[]) =>
      pageOf(placed(facets, { ascending: false, after, bound: 'LIMIT $3', eachBound: 'LIMIT $3', params }), false),
    /**
     * $1 collection, $2 from, $3 to, $4 limit, [$5 seq, $6 id when `after`]. Versions valid at `to`
     * written after `from`, walked as keys of the delta index (overwritten ones passed over there), each
     * with the version valid at `from`; those whose text is the same at both points are left out (two
     * versions of one text are split alike, so their parts compare).
     */
    changes: (after: boolean) => `SELECT ${versionColumns('a', 'ta', 'a_')}, ${versionColumns('b', 'tb', 'b_')}
      FROM (SELECT id, valid_from FROM ${VERSIONS} WHERE collection = $1 AND valid_from > $2 AND valid_from <= $3
        AND valid_to > $3 ${after ? 'AND (valid_from, id) > ($5, $6)' : ''}) AS k
      CROSS JOIN LATERAL (SELECT * FROM ${VERSIONS} WHERE collection = $1 AND id = k.id AND valid_from = k.valid_from
        LIMIT 1) AS a
      LEFT JOIN LATERAL (${validAt('$1', 'k.id', '$2')}) AS b ON true
      ${sharedJoin('a', 'ta')} ${sharedJoin('b', 'tb')}
      WHERE b.id IS NULL OR CASE WHEN (a.shared_from IS NULL) = (b.shared_from IS NULL)
        THEN a.doc <> b.doc OR a.shared_at IS DISTINCT FROM b.shared_at OR (a.shared_from <> b.shared_from AND ta.text <> tb.text)
        ELSE ${wholeText('a', 'ta')} <> ${wholeText('b', 'tb')} END
      ORDER BY k.valid_from, k.id LIMIT $4`,

    /**
     * $1 collection, $2 ids. A commit's one read: its documents' current versions (with their shared
     * texts) and every facet's latest count.
     */
    current: `SELECT 'v' AS kind, wanted.id, v.valid_from, v.sort_key, v.facet, v.placed, v.shared_from, t.text, NULL::bigint AS n
        FROM unnest($2::text[]) AS wanted (id)
        CROSS JOIN LATERAL (${validAt('$1', 'wanted.id', String(OPEN_END), true)}) AS v
        ${sharedJoin('v', 't')}
      UNION ALL
      SELECT 'c', NULL, NULL, NULL, f.facet, NULL, NULL, NULL, c.n FROM ${FACETS} AS f
        CROSS JOIN LATERAL (SELECT n FROM ${COUNTS} WHERE collection = $1 AND facet = f.facet
          AND at_seq BETWEEN 0 AND ${OPEN_END} ORDER BY at_seq DESC LIMIT 1) AS c
        WHERE f.collection = $1`,
    /**
     * A commit's one write (parameters: postgres-history-write.ts writeParams): closings of stored
     * versions and placements, and the new versions, placements, shared texts, counts and facets. The
     * versions' and shared texts' own texts travel joined (postgres-joined-texts.ts).
     */
    write: `WITH closed_versions AS (
        UPDATE ${VERSIONS} AS h SET valid_to = c.valid_to
          FROM (${probed(VERSIONS, 'valid_from', 'valid_to', '$2', '$3', '$4')}) AS c WHERE h.ctid = c.row
      ), new_versions AS (
        INSERT INTO ${VERSIONS} (collection, id, valid_from, valid_to, written_at, sort_key, facet, placed, shared_from, shared_at, doc)
          SELECT $1, * FROM unnest($5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[], $10::text[],
            $11::bigint[], $12::bigint[], $13::integer[], ${splitTexts('$14')})
      ), closed_placements AS (
        UPDATE ${PLACEMENTS} AS h SET to_seq = c.to_seq
          FROM (${probed(PLACEMENTS, 'from_seq', 'to_seq', '$15', '$16', '$17')}) AS c WHERE h.ctid = c.row
      ), new_placements AS (
        INSERT INTO ${PLACEMENTS} (collection, id, from_seq, to_seq, sort_key, facet)
          SELECT $1, * FROM unnest($18::text[], $19::bigint[], $20::bigint[], $21::text[], $22::text[])
      ), new_texts AS (
        INSERT INTO ${SHARED} (collection, id, valid_from, text)
          SELECT $1, * FROM unnest($23::text[], $24::bigint[], ${splitTexts('$25')})
      ), new_counts AS (
        INSERT INTO ${COUNTS} (collection, facet, at_seq, n)
          SELECT $1, * FROM unnest($26::text[], $27::bigint[], $28::bigint[])
          ON CONFLICT (collection, facet, at_seq) DO UPDATE SET n = excluded.n
      ), new_facets AS (
        INSERT INTO ${FACETS} (collection, facet) SELECT DISTINCT $1, facet FROM unnest($26::text[]) AS f (facet)
          ON CONFLICT DO NOTHING
      )
      SELECT 1`,
  };
}

export type HistorySql = ReturnType<typeof historySql>;
