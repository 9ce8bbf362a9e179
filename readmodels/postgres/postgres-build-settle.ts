/**
 * What a replay's build does once its last commit is in, before the switch serves it (postgres-read-store.ts
 * close): its commits skipped the WAL flush (synchronous_commit off), so one synchronous commit flushes
 * every one before it; and its tables are analysed, because a generation the planner has no statistics of
 * (autovacuum off, or before its next round) planned a board page as a scan of every document of its facets.
 */
import type pg from 'pg';

export async function settleBuild(client: pg.ClientBase, schema: string): Promise<void> {
  await client.query('BEGIN');
  await client.query('SELECT pg_current_xact_id()');
  await client.query('COMMIT');
  const tables = await client.query<{ t: string }>(
    `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = $1`,
    [schema],
  );
  if (tables.rows.length > 0) await client.query(`ANALYZE ${tables.rows.map((row) => row.t).join(', ')}`);
}
