/**
 * The SQL of an append, run by postgres-event-log.ts inside its transaction under the append lock:
 * one statement reads what the batch needs to know, then one multi-row INSERT per 5,000 rows.
 */
import type pg from 'pg';
import type { AppendedEvent, ExpectedRevision, NewEvent } from '../port.ts';
import { EVENTS_TABLE } from './schema.ts';

export type NewRow = {
  position: number;
  id: string;
  stream: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
};

/** to_char format of recordedAt: ISO 8601 in UTC to the millisecond, as the port gives it. */
export const ISO_MS = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

const ROWS_PER_INSERT = 5_000;

/**
 * One statement under the append lock: the head, this append's recordedAt ($3, the appending process's
 * clock as on SQLite, never before the last event's), which of $1's ids are stored, and $2's last revisions.
 */
const APPEND_STATE = `
SELECT
  (SELECT COALESCE(max(position), 0) FROM ${EVENTS_TABLE})::text AS head,
  to_char(greatest($3::timestamptz,
    (SELECT recorded_at FROM ${EVENTS_TABLE} ORDER BY position DESC LIMIT 1)) AT TIME ZONE 'UTC', ${ISO_MS}) AS recorded_at,
  (SELECT COALESCE(json_agg(json_build_array(id, position, revision)), '[]')
     FROM ${EVENTS_TABLE} WHERE id = ANY($1::text[])) AS stored,
  (SELECT COALESCE(json_agg(json_build_array(s.stream,
     (SELECT revision FROM ${EVENTS_TABLE} e WHERE e.stream = s.stream ORDER BY revision DESC LIMIT 1))), '[]')
     FROM unnest($2::text[]) AS s(stream)) AS revisions`;

type AppendState = {
  head: number;
  recordedAt: string;
  stored: Map<string, AppendedEvent>;
  /** Last revision per asked stream, -1 for a stream that does not exist. */
  revisions: Map<string, number>;
};

export function revisionMatches(expected: ExpectedRevision, actual: number | null): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === null;
  if (expected === 'stream_exists') return actual !== null;
  return actual === expected;
}

/** The JSON texts of an event, made before any connection is taken (a value JSON cannot hold fails here). */
export function payloadOf(event: NewEvent): { data: string; metadata: string } {
  const data = JSON.stringify(event.data) as string | undefined;
  if (data === undefined) throw new TypeError(`event ${event.id}: data is not a JSON value`);
  return { data, metadata: event.metadata === undefined ? '{}' : JSON.stringify(event.metadata) };
}

export async function insertRows(client: pg.PoolClient, rows: readonly NewRow[], recordedAt: string): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const params: unknown[] = [recordedAt];
    const values: string[] = [];
    for (let i = start; i < Math.min(rows.length, start + ROWS_PER_INSERT); i += 1) {
      const row = rows[i]!;
      const n = params.length;
      values.push(`($${n + 1},$${n + 2},$${n + 3},$${n + 4},$${n + 5},$${n + 6},$${n + 7},$1)`);
      params.push(row.position, row.id, row.stream, row.revision, row.type, row.data, row.metadata);
    }
    await client.query(
      `INSERT INTO ${EVENTS_TABLE} (position, id, stream, revision, type, data, metadata, recorded_at) VALUES ${values.join(',')}`,
      params,
    );
  }
}

export async function readAppendState(
  client: pg.PoolClient,
  ids: readonly string[],
  streams: readonly string[],
): Promise<AppendState> {
  const result = await client.query<{
    head: string;
    recorded_at: string;
    stored: [string, number, number][];
    revisions: [string, number | null][];
  }>(APPEND_STATE, [ids, streams, new Date().toISOString()]);
  const row = result.rows[0]!;
  return {
    head: Number(row.head),
    recordedAt: row.recorded_at,
    stored: new Map(
      row.stored.map(([id, position, revision]) => [id, { id, position, revision, duplicate: true }] as const),
    ),
    revisions: new Map(row.revisions.map(([stream, revision]) => [stream, revision ?? -1] as const)),
  };
}
