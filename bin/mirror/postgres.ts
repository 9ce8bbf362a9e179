import pg from 'pg';
import { pause } from '../../client/http.ts';
import { CURSOR_TABLE, MIRROR_TABLE, numbered, redactedUrl, type MirrorState, type MirrorStore } from './store.ts';

/**
 * The mirror in PostgreSQL (node-postgres). The tables go to the first schema of the connection's
 * search_path (`?options=-c%20search_path%3Dname` picks one). `project_json` is the JSON as served
 * (text); `project` the same as jsonb, NULL where jsonb cannot hold it (a `\u0000`, a lone surrogate),
 * so no row stops the mirror. A lost connection (a restart, a terminated backend) is reconnected with
 * backoff, and the commit in hand made again from the stored cursor.
 */
export type PostgresMirrorOptions = {
  /** Aborting stops reconnecting (the commit in hand then fails; the stored cursor is kept). */
  signal?: AbortSignal;
  /** Told each time the connection is lost: why, and the seconds until the next attempt. */
  onLost?: (reason: string, seconds: number) => void;
  backoff?: { baseMs: number; capMs: number };
};

/** `application_name` unless the URL names one: what the mirror's sessions are known by in pg_stat_activity. */
export const APPLICATION_NAME = 'pulseboard mirror';
const BACKOFF = { baseMs: 250, capMs: 10_000 };
/** Postgres' own words for a session it ended or cannot start yet (admin/crash shutdown, starting up). */
const LOST_SQLSTATES = new Set(['57P01', '57P02', '57P03']);
const LOST_SOCKET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** Whether an error is the connection going away (worth reconnecting), not a statement PostgreSQL refused. */
export function isConnectionLost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (LOST_SQLSTATES.has(code) || code.startsWith('08') || LOST_SOCKET_CODES.has(code)))
    return true;
  // node-postgres' own errors for a socket that closed under it carry no code.
  return /Connection terminated|not queryable|Connection ended/i.test(error.message);
}

/**
 * The jsonb of a JSON text, or NULL where jsonb refuses it. Only texts with a `\u` escape can be
 * refused (JSON.stringify escapes nothing else), so only those pay for the exception block.
 */
const JSONB_OF = `CREATE OR REPLACE FUNCTION ${MIRROR_TABLE}_jsonb(json text) RETURNS jsonb
  LANGUAGE plpgsql IMMUTABLE AS $$
  BEGIN
    RETURN json::jsonb;
  EXCEPTION WHEN others THEN
    RETURN NULL;
  END $$`;

/** Creates the tables, or brings an older version's up to this one (see docs/decisions.md). */
async function prepare(client: pg.Client): Promise<void> {
  await client.query('BEGIN');
  try {
    // Two mirrors starting on one schema prepare it one after the other.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.${MIRROR_TABLE}'))`);
    await client.query(JSONB_OF);
    const columns = await client.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
      [MIRROR_TABLE],
    );
    const names = new Set(columns.rows.map((c) => c.column_name));
    if (names.size > 0 && !names.has('project_json')) {
      // An older mirror's table kept only jsonb, which is not the JSON as served: every row is walked
      // again from the beginning and rewritten with its served text (seq keeps growing).
      await client.query(`ALTER TABLE ${MIRROR_TABLE} ADD COLUMN project_json text`);
      await client.query(`UPDATE ${MIRROR_TABLE} SET project_json = project::text`);
      await client.query(`ALTER TABLE ${MIRROR_TABLE} ALTER COLUMN project_json SET NOT NULL`);
      await client.query(`ALTER TABLE ${MIRROR_TABLE} ALTER COLUMN project DROP NOT NULL`);
      await client.query(`UPDATE ${CURSOR_TABLE} SET cursor = NULL`);
    }
    await client.query(`CREATE TABLE IF NOT EXISTS ${MIRROR_TABLE} (
      id text PRIMARY KEY,
      project jsonb,
      project_json text NOT NULL,
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
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

async function readState(client: pg.Client, lock: boolean): Promise<MirrorState> {
  const result = await client.query<{ cursor: string | null; seq: string }>(
    `SELECT cursor, seq FROM ${CURSOR_TABLE} WHERE one = 1${lock ? ' FOR UPDATE' : ''}`,
  );
  const row = result.rows[0]!;
  return { cursor: row.cursor, seq: Number(row.seq) };
}

export async function openPostgresMirror(url: string, options: PostgresMirrorOptions = {}): Promise<MirrorStore> {
  const backoff = options.backoff ?? BACKOFF;
  const connect = async () => {
    const client = new pg.Client({ connectionString: url, application_name: APPLICATION_NAME });
    // A connection lost between commits surfaces on the next query; this keeps it from crashing the process meanwhile.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    return client;
  };
  let client: pg.Client | null = await connect();
  try {
    await prepare(client);
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }

  /** Runs `work` on the connection; when it is lost, reconnects with backoff and runs `work` again. */
  const withConnection = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      try {
        client ??= await connect();
        return await work(client);
      } catch (error) {
        if (!isConnectionLost(error)) throw error;
        void client?.end().catch(() => {});
        client = null;
        const ms = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.min(attempt, 16));
        options.onLost?.(error instanceof Error ? error.message : String(error), ms / 1000);
        if (!(await pause(ms, options.signal)))
          throw new Error('stopped while reconnecting to PostgreSQL', { cause: error });
      }
    }
  };

  return {
    name: redactedUrl(url),
    state: () => withConnection((c) => readState(c, false)),
    commit: (from, rows, cursor, source) =>
      withConnection(async (c) => {
        const page = numbered(rows, from.seq);
        await c.query('BEGIN');
        try {
          // The row lock serialises two mirrors on one store; the second sees the cursor moved and stops.
          const stored = await readState(c, true);
          if (stored.cursor === cursor && stored.seq === page.seq && stored.cursor !== from.cursor) {
            // Committed already: the connection was lost after COMMIT reached the server.
            await c.query('ROLLBACK');
            return { ok: true, state: stored };
          }
          if (stored.cursor !== from.cursor || stored.seq !== from.seq) {
            await c.query('ROLLBACK');
            return {
              ok: false,
              reason: 'the stored cursor moved under this mirror: is another mirror writing to the same store?',
            };
          }
          if (page.rows.length > 0) {
            // One statement a page: the rows travel as three arrays.
            await c.query(
              `INSERT INTO ${MIRROR_TABLE} (id, project, project_json, written_at, seq)
               SELECT id, CASE WHEN strpos(json, chr(92) || 'u') = 0 THEN json::jsonb ELSE ${MIRROR_TABLE}_jsonb(json) END,
                 json, now(), seq
               FROM unnest($1::text[], $2::text[], $3::bigint[]) AS page (id, json, seq)
               ON CONFLICT (id) DO UPDATE SET project = excluded.project, project_json = excluded.project_json,
                 written_at = excluded.written_at, seq = excluded.seq`,
              [page.rows.map((r) => r.id), page.rows.map((r) => r.json), page.rows.map((r) => r.seq)],
            );
          }
          await c.query(
            `UPDATE ${CURSOR_TABLE} SET cursor = $1, seq = $2, source = $3, updated_at = now() WHERE one = 1`,
            [cursor, page.seq, source],
          );
          await c.query('COMMIT');
          return { ok: true, state: { cursor, seq: page.seq } };
        } catch (error) {
          await c.query('ROLLBACK').catch(() => {});
          throw error;
        }
      }),
    async close() {
      await client?.end();
      client = null;
    },
  };
}
