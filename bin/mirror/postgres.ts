import pg from 'pg';
import { CURSOR_TABLE, MIRROR_TABLE, numbered, redactedUrl, type MirrorStore } from './store.ts';

/**
 * The mirror in PostgreSQL through one connection (node-postgres). The tables go to the first schema
 * of the connection's search_path (`?options=-c%20search_path%3Dname` picks one); project is jsonb.
 */
export async function openPostgresMirror(url: string): Promise<MirrorStore> {
  const client = new pg.Client({ connectionString: url });
  // A connection lost between commits surfaces on the next query; this keeps it from crashing the process meanwhile.
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS ${MIRROR_TABLE} (
      id text PRIMARY KEY,
      project jsonb NOT NULL,
      written_at timestamptz NOT NULL,
      seq bigint NOT NULL
    )`);
    await client.query(`CREATE INDEX IF NOT EXISTS ${MIRROR_TABLE}_seq ON ${MIRROR_TABLE} (seq)`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${CURSOR_TABLE} (
      one smallint PRIMARY KEY CHECK (one = 1),
      cursor text,
      seq bigint NOT NULL,
      source text,
      updated_at timestamptz
    )`);
    await client.query(
      `INSERT INTO ${CURSOR_TABLE} (one, cursor, seq) VALUES (1, NULL, 0) ON CONFLICT (one) DO NOTHING`,
    );
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }

  const readState = async (lock: boolean) => {
    const result = await client.query<{ cursor: string | null; seq: string }>(
      `SELECT cursor, seq FROM ${CURSOR_TABLE} WHERE one = 1${lock ? ' FOR UPDATE' : ''}`,
    );
    const row = result.rows[0]!;
    return { cursor: row.cursor, seq: Number(row.seq) };
  };

  return {
    name: redactedUrl(url),
    state: () => readState(false),
    async commit(from, rows, cursor, source) {
      await client.query('BEGIN');
      try {
        // The row lock serialises two mirrors on one store; the second sees the cursor moved and stops.
        const stored = await readState(true);
        if (stored.cursor !== from.cursor || stored.seq !== from.seq) {
          await client.query('ROLLBACK');
          return {
            ok: false,
            reason: 'the stored cursor moved under this mirror: is another mirror writing to the same store?',
          };
        }
        const page = numbered(rows, from.seq);
        if (page.rows.length > 0) {
          // One statement a page: the rows travel as three arrays.
          await client.query(
            `INSERT INTO ${MIRROR_TABLE} (id, project, written_at, seq)
             SELECT id, project, now(), seq FROM unnest($1::text[], $2::jsonb[], $3::bigint[]) AS page (id, project, seq)
             ON CONFLICT (id) DO UPDATE SET project = excluded.project, written_at = excluded.written_at, seq = excluded.seq`,
            [page.rows.map((r) => r.id), page.rows.map((r) => r.json), page.rows.map((r) => r.seq)],
          );
        }
        await client.query(
          `UPDATE ${CURSOR_TABLE} SET cursor = $1, seq = $2, source = $3, updated_at = now() WHERE one = 1`,
          [cursor, page.seq, source],
        );
        await client.query('COMMIT');
        return { ok: true, state: { cursor, seq: page.seq } };
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    },
    async close() {
      await client.end();
    },
  };
}
