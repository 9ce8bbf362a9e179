/**
 * The PostgreSQL event log's tables, in the first schema of the connection's search_path.
 *
 * `pulseboard_events`: one row per event. `position` is assigned by the appender under the append
 * lock (head + 1, …), so positions are gapless and become visible in order; `data` and `metadata`
 * are the JSON text as given (`text`, so nothing is reparsed or rewritten); `recorded_at` never
 * decreases in position order. `pulseboard_log_meta` holds the archive id.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

export const EVENTS_TABLE = 'pulseboard_events';
export const META_TABLE = 'pulseboard_log_meta';
/** The LISTEN/NOTIFY channel an append's commit announces its top position on. */
export const APPEND_CHANNEL = 'pulseboard_events_appended';

/**
 * Transaction-level advisory lock keys (two int4 halves: 'pblg' and a purpose), per database.
 * APPEND serialises every append; SCHEMA serialises concurrent first starts creating the tables.
 */
export const LOCK_CLASS = 0x70626c67;
export const APPEND_LOCK = 1;
const SCHEMA_LOCK = 2;

const DDL = `
CREATE TABLE IF NOT EXISTS ${EVENTS_TABLE} (
  position bigint PRIMARY KEY,
  id text NOT NULL UNIQUE,
  stream text NOT NULL,
  revision integer NOT NULL,
  type text NOT NULL,
  data text NOT NULL,
  metadata text NOT NULL,
  recorded_at timestamptz NOT NULL,
  UNIQUE (stream, revision)
);
CREATE TABLE IF NOT EXISTS ${META_TABLE} (key text PRIMARY KEY, value text NOT NULL);
`;

/**
 * Creates the tables and the archive id unless they exist. A log that exists is only looked at, so a
 * role without CREATE on the schema (a read-only export) can open it.
 */
export async function ensureSchema(client: pg.ClientBase): Promise<void> {
  const present = await client.query<{ ready: boolean }>(
    `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ready`,
    [EVENTS_TABLE, META_TABLE],
  );
  if (present.rows[0]?.ready) {
    const archive = await client.query(`SELECT 1 FROM ${META_TABLE} WHERE key = 'archive_id'`);
    if (archive.rowCount === 1) return;
  }
  await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${LOCK_CLASS}, ${SCHEMA_LOCK})`);
  try {
    await client.query(DDL);
    await client.query(
      `INSERT INTO ${META_TABLE} (key, value) VALUES ('archive_id', $1) ON CONFLICT (key) DO NOTHING`,
      [randomUUID()],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
