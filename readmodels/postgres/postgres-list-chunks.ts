/**
 * The PostgreSQL store's listing chunks (readmodels/list-chunks.ts): `list_chunks` (a chunk's start
 * and row count) and `list_chunk_facets` (its rows per facet) in the generation's schema, kept by each
 * commit in its transaction. One statement counts a commit's moved rows in their chunks (each row's
 * chunk found by one index probe, the greatest start at or below it) and returns the chunks it grew;
 * a chunk past CHUNK_ROWS_MAX is cut again in the same transaction (one read of its rows).
 */
import type pg from 'pg';
import { CHUNK_ROWS_MAX, pieceCutter, type ChunkStart, type Piece } from '../list-chunks.ts';

/** A row's place before and after a commit that moved it (`from` undefined: a new document). */
export type RowMove = {
  from?: { key: string; id: string; facet: string };
  to: { key: string; id: string; facet: string };
};

/** Counts `moves` in their chunks and cuts every chunk that grew past its bound. Inside the commit's transaction. */
export async function applyMoves(
  client: pg.ClientBase,
  s: string,
  collection: string,
  moves: readonly RowMove[],
): Promise<void> {
  if (moves.length === 0) return;
  const keys: string[] = [];
  const ids: string[] = [];
  const facets: string[] = [];
  const by: number[] = [];
  const add = (at: { key: string; id: string; facet: string }, n: number) => {
    keys.push(at.key);
    ids.push(at.id);
    facets.push(at.facet);
    by.push(n);
  };
  for (const move of moves) {
    if (move.from) add(move.from, -1);
    add(move.to, 1);
  }
  const grown = await client.query<{ start_key: string; start_id: string; total: number }>(
    `WITH moved AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::integer[]) AS m(sort_key, id, facet, by)
     ), placed AS (
       SELECT c.start_key, c.start_id, m.facet, m.by FROM moved m CROSS JOIN LATERAL (
         SELECT start_key, start_id FROM ${s}.list_chunks
         WHERE collection = $1 AND (start_key, start_id) <= (m.sort_key, m.id)
         ORDER BY start_key DESC, start_id DESC LIMIT 1) c
     ), facet_sums AS (
       INSERT INTO ${s}.list_chunk_facets (collection, start_key, start_id, facet, n)
       SELECT $1, start_key, start_id, facet, SUM(by) FROM placed GROUP BY start_key, start_id, facet
       ON CONFLICT (collection, start_key, start_id, facet) DO UPDATE SET n = list_chunk_facets.n + excluded.n
     )
     UPDATE ${s}.list_chunks c SET total = c.total + t.n
     FROM (SELECT start_key, start_id, SUM(by) AS n FROM placed GROUP BY start_key, start_id) t
     WHERE c.collection = $1 AND c.start_key = t.start_key AND c.start_id = t.start_id
     RETURNING c.start_key, c.start_id, c.total`,
    [collection, keys, ids, facets, by],
  );
  for (const chunk of grown.rows) {
    if (chunk.total > CHUNK_ROWS_MAX)
      await cut(client, s, collection, { key: chunk.start_key, id: chunk.start_id }, chunk.total);
  }
}

/** Replaces the chunk starting at `start` by the pieces of its rows (one walk of them, oldest first). */
async function cut(
  client: pg.ClientBase,
  s: string,
  collection: string,
  start: ChunkStart,
  total: number,
): Promise<void> {
  const next = await client.query<{ start_key: string; start_id: string }>(
    `SELECT start_key, start_id FROM ${s}.list_chunks WHERE collection = $1 AND (start_key, start_id) > ($2, $3)
     ORDER BY start_key, start_id LIMIT 1`,
    [collection, start.key, start.id],
  );
  const upper = next.rows[0];
  const rows = await client.query<[string, string, string]>({
    text: `SELECT sort_key, id, facet FROM ${s}.docs WHERE collection = $1 AND (sort_key, id) >= ($2, $3)
           ${upper ? 'AND (sort_key, id) < ($4, $5)' : ''} ORDER BY sort_key, id`,
    values: [collection, start.key, start.id, ...(upper ? [upper.start_key, upper.start_id] : [])],
    rowMode: 'array',
  });
  const cutter = pieceCutter(start, total);
  const pieces: Piece[] = [];
  for (const [key, id, facet] of rows.rows) {
    const closed = cutter.add(key, id, facet);
    if (closed) pieces.push(closed);
  }
  pieces.push(cutter.end());
  await client.query(
    `WITH gone AS (DELETE FROM ${s}.list_chunk_facets WHERE collection = $1 AND start_key = $2 AND start_id = $3)
     DELETE FROM ${s}.list_chunks WHERE collection = $1 AND start_key = $2 AND start_id = $3`,
    [collection, start.key, start.id],
  );
  const facetRows = pieces.flatMap((piece) => [...piece.facets].map(([facet, n]) => ({ piece, facet, n })));
  await client.query(
    `WITH chunks AS (
       INSERT INTO ${s}.list_chunks (collection, start_key, start_id, total)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[])
     )
     INSERT INTO ${s}.list_chunk_facets (collection, start_key, start_id, facet, n)
     SELECT $1, * FROM unnest($5::text[], $6::text[], $7::text[], $8::bigint[])`,
    [
      collection,
      pieces.map((p) => p.start.key),
      pieces.map((p) => p.start.id),
      pieces.map((p) => p.total),
      facetRows.map((r) => r.piece.start.key),
      facetRows.map((r) => r.piece.start.id),
      facetRows.map((r) => r.facet),
      facetRows.map((r) => r.n),
    ],
  );
}
