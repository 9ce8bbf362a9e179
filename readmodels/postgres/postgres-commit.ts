/**
 * The PostgreSQL store's commit: one transaction of a fixed number of statements whatever the batch's
 * size (each batch-wide one a multi-row statement over `unnest` arrays):
 * 1. the collection's checkpoint row (and its first listing chunk) made if missing, then read
 *    `FOR UPDATE`: every writer of the collection queues here, so the compare-and-set with `expected`
 *    sees the last committed value and two writers never both apply;
 * 2. the batch's previous sort keys, facets and key texts (one read by primary key);
 * 3. the documents upserted (their texts joined: postgres-joined-texts.ts); lookup keys rewritten only for documents whose keys text changed;
 * 4. the per-facet counters and the listing chunks moved by what changed (postgres-list-chunks.ts);
 * 5. the history's versions (postgres-history.ts), then the checkpoint, and a NOTIFY naming the
 *    collection and checkpoint, which PostgreSQL delivers when (and only if) the transaction commits.
 */
import { facetDeltas } from '../list-chunks.ts';
import type pg from 'pg';
import type { CommitOutcome, DocWrite } from '../port.ts';
import { ReplayFencedError } from '../generations/port.ts';
import type { PostgresHistory } from './postgres-history.ts';
import { joinTexts, splitTexts } from './postgres-joined-texts.ts';
import { applyMoves, type RowMove } from './postgres-list-chunks.ts';
import { quoteIdent } from './postgres-pool.ts';
import { SPACE_SCHEMA } from './postgres-schema.ts';

/** The channel every commit of every generation is announced on (postgres-commit-feed.ts listens). */
export const COMMIT_CHANNEL = 'pulseboard_commits';

/** What a commit's NOTIFY carries. */
export type CommitNotice = { generation: number; collection: string; checkpoint: number };

/** A replay's build writes only while its lock is still the one it took: the lock's fencing token. */
export type Fence = number;

/** Inside a transaction: whether `fence` is the held lock's token (FOR SHARE: a takeover waits for the transaction). */
export async function fenceHolds(client: pg.ClientBase, fence: Fence): Promise<boolean> {
  const held = await client.query(
    `SELECT 1 FROM ${SPACE_SCHEMA}.replay_lock WHERE id = 1 AND token = $1 AND holder IS NOT NULL FOR SHARE`,
    [fence],
  );
  return held.rowCount === 1;
}

type Row = {
  id: string;
  seq: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  keys: string;
  doc: string;
  state: string;
  keyPairs: [string, string][];
};

function jsonText(value: unknown, what: string, id: string): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`document ${id}: ${what} is not JSON`);
  return text;
}

/** One row per id (the batch's last write of it), every text made: a document that is not JSON fails here, before any SQL. */
export function commitRows(writes: readonly DocWrite[]): Row[] {
  const rows = new Map<string, Row>();
  for (const w of writes) {
    rows.set(w.id, {
      id: w.id,
      seq: w.seq,
      writtenAt: w.writtenAt,
      sortKey: w.sortKey,
      facet: w.facet,
      keys: jsonText(w.keys, 'keys', w.id),
      doc: w.json ?? jsonText(w.doc, 'doc', w.id),
      state: jsonText(w.state, 'state', w.id),
      keyPairs: Object.entries(w.keys).flatMap(([key, values]) =>
        values.map((value): [string, string] => [key, value]),
      ),
    });
  }
  return [...rows.values()];
}

export type CommitRequest = {
  schema: string;
  generation: number;
  collection: string;
  checkpoint: number;
  expected: number | undefined;
  history: PostgresHistory | undefined;
  fence: Fence | undefined;
  /** A replay's build: its commits need not wait for the WAL flush (the store's close does, once). */
  build: boolean;
};

/** Runs the commit on `client`, which the caller has in no transaction; the caller rolls back on a rejection. */
export async function commitOn(
  client: pg.ClientBase,
  request: CommitRequest,
  writes: readonly DocWrite[],
  rows: readonly Row[],
): Promise<CommitOutcome> {
  const { collection } = request;
  const s = quoteIdent(request.schema);
  await client.query('BEGIN');
  if (request.build) await client.query('SET LOCAL synchronous_commit = off');
  if (request.fence !== undefined && !(await fenceHolds(client, request.fence))) throw new ReplayFencedError();
  await client.query(
    `WITH first_chunk AS (
       INSERT INTO ${s}.list_chunks (collection, start_key, start_id, total) VALUES ($1, '', '', 0) ON CONFLICT DO NOTHING
     )
     INSERT INTO ${s}.checkpoints (collection, position) VALUES ($1, 0) ON CONFLICT DO NOTHING`,
    [collection],
  );
  const locked = await client.query<{ position: number }>(
    `SELECT position FROM ${s}.checkpoints WHERE collection = $1 FOR UPDATE`,
    [collection],
  );
  const stored = locked.rows[0]?.position ?? 0;
  if (request.expected !== undefined && stored !== request.expected) {
    await client.query('ROLLBACK');
    return { ok: false, reason: 'checkpoint_moved', actual: stored };
  }

  if (rows.length > 0) {
    const ids = rows.map((r) => r.id);
    const before = await client.query<{ id: string; sort_key: string; facet: string; keys: string }>(
      `SELECT id, sort_key, facet, keys FROM ${s}.docs WHERE collection = $1 AND id = ANY($2::text[])`,
      [collection, ids],
    );
    const previous = new Map(before.rows.map((row) => [row.id, row]));
    await client.query(
      `INSERT INTO ${s}.docs (collection, id, seq, written_at, sort_key, facet, keys, doc, state)
       SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
         ${splitTexts('$7')}, ${splitTexts('$8')}, ${splitTexts('$9')})
       ON CONFLICT (collection, id) DO UPDATE SET seq = excluded.seq, written_at = excluded.written_at,
         sort_key = excluded.sort_key, facet = excluded.facet, keys = excluded.keys, doc = excluded.doc, state = excluded.state`,
      [
        collection,
        ids,
        rows.map((r) => r.seq),
        rows.map((r) => r.writtenAt),
        rows.map((r) => r.sortKey),
        rows.map((r) => r.facet),
        joinTexts(rows.map((r) => r.keys)),
        joinTexts(rows.map((r) => r.doc)),
        joinTexts(rows.map((r) => r.state)),
      ],
    );

    // Lookup keys: most writes leave a document's keys as they were and touch no key row.
    const rekeyed = rows.filter((r) => previous.get(r.id)?.keys !== r.keys);
    const replaced = rekeyed.filter((r) => previous.has(r.id)).map((r) => r.id);
    if (replaced.length > 0) {
      await client.query(`DELETE FROM ${s}.doc_keys WHERE collection = $1 AND id = ANY($2::text[])`, [
        collection,
        replaced,
      ]);
    }
    const pairs = rekeyed.flatMap((r) => r.keyPairs.map(([key, value]) => [key, value, r.id] as const));
    if (pairs.length > 0) {
      await client.query(
        `INSERT INTO ${s}.doc_keys (collection, key, value, id)
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[]) ON CONFLICT DO NOTHING`,
        [collection, pairs.map((p) => p[0]), pairs.map((p) => p[1]), pairs.map((p) => p[2])],
      );
    }

    const moves: RowMove[] = [];
    for (const row of rows) {
      const was = previous.get(row.id);
      if (was && was.facet === row.facet && was.sort_key === row.sortKey) continue;
      moves.push({
        ...(was ? { from: { key: was.sort_key, id: row.id, facet: was.facet } } : {}),
        to: { key: row.sortKey, id: row.id, facet: row.facet },
      });
    }
    const deltas = facetDeltas(moves);
    if (deltas.size > 0) {
      await client.query(
        `INSERT INTO ${s}.doc_counts (collection, facet, n) SELECT $1, * FROM unnest($2::text[], $3::bigint[])
         ON CONFLICT (collection, facet) DO UPDATE SET n = doc_counts.n + excluded.n`,
        [collection, [...deltas.keys()], [...deltas.values()]],
      );
    }
    await applyMoves(client, s, collection, moves);
  }
  if (writes.length > 0 && request.history) await request.history.write(client, collection, writes, stored);

  const notice: CommitNotice = { generation: request.generation, collection, checkpoint: request.checkpoint };
  await client.query(
    `WITH advanced AS (UPDATE ${s}.checkpoints SET position = $2 WHERE collection = $1)
     SELECT pg_notify($3, $4)`,
    [collection, request.checkpoint, COMMIT_CHANNEL, JSON.stringify(notice)],
  );
  await client.query('COMMIT');
  return { ok: true };
}
