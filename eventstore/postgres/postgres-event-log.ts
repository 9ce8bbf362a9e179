/**
 * The EventLog port on PostgreSQL, through a `pg` pool (tables in schema.ts).
 *
 * Ordering. Every append takes one transaction-level advisory lock (schema.ts, APPEND_LOCK) as the
 * first statement of a READ COMMITTED transaction, then reads the head and assigns positions
 * head + 1, head + 2, … PostgreSQL makes a committing transaction visible before it releases its
 * locks, so the next appender reads a head that includes it: positions become visible strictly in
 * order, and a reader following the log by position never skips an event that commits late (the
 * lock is held until COMMIT; see docs/decisions.md). Positions are gapless, so two logs fed the
 * same input number their events alike.
 *
 * Idempotency and revisions are decided under the same lock: the batch's ids and its streams' last
 * revisions are read in one statement, the fresh events are inserted with one multi-row INSERT per
 * 5,000 rows, and the commit NOTIFYs the top position (delivered at commit) for waiters in every
 * process (append-listener.ts). An id is unique across the log, as in the embedded log.
 *
 * Outages. A connection refused, lost mid-query (the client emitted 'error'), or refused by SQLSTATE
 * (pg-outages.ts) rejects with EventLogUnavailableError naming the server without credentials.
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { sleepUntilAppend } from '../append-signals.ts';
import { WAKE_ALL, createAppendSubscription, type AppendSubscriptionState } from '../append-subscription.ts';
import {
  EventLogUnavailableError,
  type AppendResult,
  type AppendedEvent,
  type EventLog,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
} from '../port.ts';
import { appendListenerSource } from './append-listener.ts';
import { ISO_MS, insertRows, payloadOf, readAppendState, revisionMatches, type NewRow } from './append-sql.ts';
import { describePostgres } from './describe.ts';
import { isPgOutage } from './pg-outages.ts';
import { APPEND_CHANNEL, APPEND_LOCK, EVENTS_TABLE, LOCK_CLASS, META_TABLE, ensureSchema } from './schema.ts';

export type PostgresEventLogOptions = {
  /** Connections in the pool (the append-notification listener has one more of its own). */
  poolSize?: number;
  /** How long opening a connection may take before it counts as an outage. */
  connectTimeoutMs?: number;
  /** How often a waiter reads the head while the listener is down (nothing is notified then). */
  pollWhileDownMs?: number;
  /** Hears each change of the listener's state, with the error behind a reconnect. */
  onSubscriptionState?: (state: AppendSubscriptionState, error?: unknown) => void;
  /**
   * Test seam: runs inside an append's transaction after its rows are inserted, before COMMIT, so a
   * test can hold an append between position assignment and commit.
   */
  beforeCommit?: () => Promise<void>;
};

type EventRow = {
  position: string;
  id: string;
  stream: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
};

const COLUMNS = `position, id, stream, revision, type, data, metadata,
  to_char(recorded_at AT TIME ZONE 'UTC', ${ISO_MS}) AS recorded_at`;

function toRecorded(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    stream: row.stream,
    revision: row.revision,
    position: Number(row.position),
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    recordedAt: row.recorded_at,
  };
}

/** Node reports a refused dual-stack connect as an AggregateError with an empty message. */
function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.message || (error as { code?: string }).code || error.name;
}

export function createPostgresEventLog(connectionString: string, options: PostgresEventLogOptions = {}): EventLog {
  const where = `PostgreSQL at ${describePostgres(connectionString)}`;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
    application_name: 'pulseboard-event-log',
  });
  /** Clients whose connection failed: their query's error is an outage, and they are not reused. */
  const lost = new WeakSet<pg.ClientBase>();
  pool.on('connect', (client) => {
    client.on('error', () => lost.add(client));
  });
  // An idle client the server closed: the pool drops it and opens another when asked.
  pool.on('error', () => undefined);

  const signals = new EventEmitter();
  signals.setMaxListeners(0);
  const subscription = createAppendSubscription(appendListenerSource(connectionString, connectTimeoutMs), {
    signals,
    onState(state, error) {
      // Waiters sleeping on notifications wake when the listener is lost, and go on by polling.
      if (state === 'reconnecting') signals.emit('append', WAKE_ALL);
      options.onSubscriptionState?.(state, error);
    },
  });
  const pollWhileDownMs = options.pollWhileDownMs ?? 1_000;
  let headSeen = 0;
  /** Wake-ups of every waiter (the listener lost, or back), counted for waiters between two steps. */
  let wakeAlls = 0;
  // Notifications move what this process knows exists, so a waiter never sleeps past one it missed.
  signals.on('append', (position: number) => {
    if (position === WAKE_ALL) wakeAlls += 1;
    else if (position > headSeen) headSeen = position;
  });
  let closed = false;
  let archive: string | undefined;
  let schema: Promise<void> | undefined;

  const unavailable = (error: unknown) =>
    new EventLogUnavailableError(`${where} does not answer (${messageOf(error)})`, { cause: error });

  async function useClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      // Failing to connect is an outage unless the server answered with a refusal of its own (auth, no database).
      if (closed || (error instanceof pg.DatabaseError && !isPgOutage(error))) throw error;
      throw unavailable(error);
    }
    try {
      const value = await work(client);
      client.release();
      return value;
    } catch (error) {
      const outage = lost.has(client) || (error instanceof Error && isPgOutage(error));
      client.release(outage ? (error as Error) : undefined);
      throw outage ? unavailable(error) : error;
    }
  }

  function schemaReady(): Promise<void> {
    schema ??= useClient((client) => ensureSchema(client)).catch((error: unknown) => {
      schema = undefined;
      throw error;
    });
    return schema;
  }

  async function query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    await schemaReady();
    return useClient(async (client) => (await client.query<R>(sql, params)).rows);
  }

  function noteHead(position: number): void {
    if (position > headSeen) headSeen = position;
    signals.emit('append', position);
  }

  /**
   * `work` inside a transaction holding the append lock. It returns the top position it inserted (0:
   * nothing), which the commit announces; with nothing inserted the transaction is rolled back.
   */
  async function underAppendLock<T>(work: (client: pg.PoolClient) => Promise<{ value: T; top: number }>): Promise<T> {
    await schemaReady();
    const { value, top } = await useClient(async (client) => {
      try {
        // The lock is its own statement: a statement's snapshot is taken before it starts waiting.
        await client.query(
          `BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(${LOCK_CLASS}, ${APPEND_LOCK})`,
        );
        const outcome = await work(client);
        if (outcome.top === 0) {
          await client.query('ROLLBACK');
          return outcome;
        }
        await options.beforeCommit?.();
        await client.query(`SELECT pg_notify('${APPEND_CHANNEL}', '${outcome.top}'); COMMIT`);
        return outcome;
      } catch (error) {
        // Also when the lock itself failed (a lock_timeout): the client goes back to the pool idle.
        if (!lost.has(client)) await client.query('ROLLBACK').catch(() => lost.add(client));
        throw error;
      }
    });
    if (top > 0) noteHead(top);
    return value;
  }

  async function headPosition(): Promise<number> {
    const [row] = await query<{ head: string }>(`SELECT COALESCE(max(position), 0)::text AS head FROM ${EVENTS_TABLE}`);
    return Number(row!.head);
  }

  async function streamRevision(stream: string): Promise<number | null> {
    const [row] = await query<{ revision: number }>(
      `SELECT revision FROM ${EVENTS_TABLE} WHERE stream = $1 ORDER BY revision DESC LIMIT 1`,
      [stream],
    );
    return row ? row.revision : null;
  }

  return {
    async archiveId() {
      if (archive) return archive;
      const [row] = await query<{ value: string }>(`SELECT value FROM ${META_TABLE} WHERE key = 'archive_id'`);
      if (!row) throw new Error(`${where}: ${META_TABLE} holds no archive_id`);
      archive = row.value;
      return archive;
    },

    async append(
      stream: string,
      events: readonly NewEvent[],
      expected: ExpectedRevision = 'any',
    ): Promise<AppendResult> {
      if (events.length === 0) return { ok: true, events: [], revision: (await streamRevision(stream)) ?? -1 };
      const payloads = events.map(payloadOf);
      return underAppendLock<AppendResult>(async (client) => {
        const state = await readAppendState(
          client,
          events.map((event) => event.id),
          [stream],
        );
        const actual = state.revisions.get(stream)!;
        // An id stored, or repeated earlier in this append, reports the stored (or first) event.
        const results: (AppendedEvent | undefined)[] = events.map((event) => state.stored.get(event.id));
        const first = new Map<string, number>();
        const fresh: number[] = [];
        events.forEach((event, index) => {
          if (results[index] || first.has(event.id)) return;
          first.set(event.id, index);
          fresh.push(index);
        });
        const finish = () =>
          events.map((event, index) => results[index] ?? { ...results[first.get(event.id)!]!, duplicate: true });
        // A retry of an append that already landed is idempotent whatever revision it expected.
        if (fresh.length === 0) return { value: { ok: true, events: finish(), revision: actual }, top: 0 };
        const current = actual === -1 ? null : actual;
        if (!revisionMatches(expected, current))
          return { value: { ok: false, reason: 'wrong_expected_revision', actualRevision: current }, top: 0 };
        const rows: NewRow[] = fresh.map((index, n) => {
          const event = events[index]!;
          const row = { position: state.head + n + 1, revision: actual + n + 1, ...payloads[index]! };
          results[index] = { id: event.id, position: row.position, revision: row.revision, duplicate: false };
          return { ...row, id: event.id, stream, type: event.type };
        });
        await insertRows(client, rows, state.recordedAt);
        const last = rows.at(-1)!;
        return { value: { ok: true, events: finish(), revision: last.revision }, top: last.position };
      });
    },

    async appendBatch(groups: readonly StreamAppend[]) {
      if (groups.length === 0) return [];
      const payloads = new Map<NewEvent, { data: string; metadata: string }>();
      for (const group of groups) for (const event of group.events) payloads.set(event, payloadOf(event));
      const ids = [...new Set(groups.flatMap((group) => group.events.map((event) => event.id)))];
      const streams = [...new Set(groups.filter((group) => group.events.length > 0).map((group) => group.stream))];
      if (ids.length === 0) return groups.map(() => []);
      return underAppendLock(async (client) => {
        const state = await readAppendState(client, ids, streams);
        const batch = new Map<string, AppendedEvent>();
        const rows: NewRow[] = [];
        let position = state.head;
        const results = groups.map((group) =>
          group.events.map((event): AppendedEvent => {
            const earlier = state.stored.get(event.id) ?? batch.get(event.id);
            if (earlier) return { ...earlier, duplicate: true };
            const revision = state.revisions.get(group.stream)! + 1;
            state.revisions.set(group.stream, revision);
            position += 1;
            rows.push({
              position,
              id: event.id,
              stream: group.stream,
              revision,
              type: event.type,
              ...payloads.get(event)!,
            });
            const appended: AppendedEvent = { id: event.id, position, revision, duplicate: false };
            batch.set(event.id, appended);
            return appended;
          }),
        );
        await insertRows(client, rows, state.recordedAt);
        return { value: results, top: rows.length > 0 ? position : 0 };
      });
    },

    async readStream(stream: string, options: ReadStreamOptions = {}) {
      const rows =
        options.toPosition === undefined
          ? await query<EventRow>(`SELECT ${COLUMNS} FROM ${EVENTS_TABLE} WHERE stream = $1 ORDER BY revision`, [
              stream,
            ])
          : await query<EventRow>(
              `SELECT ${COLUMNS} FROM ${EVENTS_TABLE} WHERE stream = $1 AND position <= $2 ORDER BY revision`,
              [stream, options.toPosition],
            );
      return rows.map(toRecorded);
    },

    streamRevision,

    async readAll(options: ReadAllOptions) {
      if (options.limit <= 0) return [];
      const params: unknown[] = [options.afterPosition];
      const clauses = ['position > $1'];
      if (options.toPosition !== undefined) {
        params.push(options.toPosition);
        clauses.push(`position <= $${params.length}`);
      }
      const prefixes = options.typePrefixes ?? [];
      if (prefixes.length > 0 && !prefixes.includes('')) {
        params.push(prefixes);
        clauses.push(`type ^@ ANY($${params.length}::text[])`);
      }
      params.push(options.limit);
      // One statement, one snapshot: appends become visible in position order, so this is a prefix.
      const rows = await query<EventRow>(
        `SELECT ${COLUMNS} FROM ${EVENTS_TABLE} WHERE ${clauses.join(' AND ')} ORDER BY position LIMIT $${params.length}`,
        params,
      );
      return rows.map(toRecorded);
    },

    headPosition,

    async waitForAppend(afterPosition: number, timeoutMs: number, signal?: AbortSignal) {
      if (closed || signal?.aborted || headSeen > afterPosition) return;
      const started = Date.now();
      // Listening before the head is read: an append committed after the read is then notified.
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const givenUp = new Promise<'given up'>((resolve) => {
        timer = setTimeout(() => resolve('given up'), timeoutMs);
        onAbort = () => resolve('given up');
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      const outcome = await Promise.race([subscription.ready(), givenUp]).finally(() => {
        clearTimeout(timer);
        if (onAbort) signal?.removeEventListener('abort', onAbort);
      });
      if (outcome === 'given up' || closed || signal?.aborted) return;
      for (;;) {
        const wakeAllsBefore = wakeAlls;
        const head = await headPosition();
        if (head > headSeen) headSeen = head;
        // A notification, or the listener lost or back, while the head was read counts too.
        if (headSeen > afterPosition || wakeAlls !== wakeAllsBefore || closed || signal?.aborted) return;
        const remaining = timeoutMs - (Date.now() - started);
        if (remaining <= 0) return;
        // While the listener is down no append is notified: the head is read again every second.
        const live = subscription.state() === 'live';
        await sleepUntilAppend(signals, afterPosition, live ? remaining : Math.min(remaining, pollWhileDownMs), signal);
        if (live || headSeen > afterPosition || wakeAlls !== wakeAllsBefore || closed || signal?.aborted) return;
      }
    },

    /**
     * A binary search over positions (each probe one primary-key seek), relying on recordedAt never
     * decreasing in position order. Every event at or below `low` was recorded before `time`.
     */
    async positionBefore(time: string) {
      const at = Date.parse(time);
      if (Number.isNaN(at)) throw new RangeError(`positionBefore: ${JSON.stringify(time)} is not an ISO 8601 time`);
      const instant = new Date(at).toISOString();
      let low = 0;
      let high = await headPosition();
      await useClient(async (client) => {
        while (low < high) {
          const mid = Math.ceil((low + high) / 2);
          const { rows } = await client.query<{ position: string; before: boolean }>(
            `SELECT position, recorded_at < $2::timestamptz AS before FROM ${EVENTS_TABLE}
               WHERE position >= $1 ORDER BY position LIMIT 1`,
            [mid, instant],
          );
          const row = rows[0];
          if (row?.before) low = Number(row.position);
          else high = mid - 1;
        }
      });
      return low;
    },

    subscriptionState: () => subscription.state(),

    async close() {
      if (closed) return;
      closed = true;
      // Pending waits end now rather than holding the process open until their timeout.
      signals.emit('close');
      signals.removeAllListeners();
      await subscription.close();
      await pool.end();
    },
  };
}
