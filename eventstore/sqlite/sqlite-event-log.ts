import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { DatabaseSync } from 'node:sqlite';
import { sleepUntilAppend } from '../append-signals.ts';
import { inTransaction, openSqlite } from '../../config/sqlite.ts';
import type {
  AppendResult,
  AppendedEvent,
  EventLog,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
} from '../port.ts';
import type { StatementSync } from 'node:sqlite';

type EventRow = {
  position: number;
  id: string;
  stream: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
};

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  stream TEXT NOT NULL,
  revision INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  metadata TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  UNIQUE (stream, revision)
);
CREATE TABLE IF NOT EXISTS log_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** A recorded event of this log, as plain data (metadata parsed too): the folds read every member. */
function toRecorded(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    stream: row.stream,
    revision: row.revision,
    position: row.position,
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    recordedAt: row.recorded_at,
  };
}

/**
 * Event ids are random UUIDs, so every append touches a random page of the id index: a page cache
 * that holds the index (64 MiB rather than SQLite's 2 MiB) keeps ingest from re-reading pages from
 * the OS for each row. Exported so benchmarks give their raw-SQLite baseline the same setting.
 */
export const EVENT_LOG_PRAGMAS = 'PRAGMA cache_size = -65536';

/** SQLite's extended result code for a UNIQUE constraint failure. */
const SQLITE_CONSTRAINT_UNIQUE = 2067;

/** Streams per `IN (…)` look-up of a batch append; shorter lists are padded, so one statement serves. */
const LOOKUP_CHUNK = 500;

/** Runs `statement` over `values` in fixed-size chunks, padding the last with its own first value. */
function lookupInChunks<R>(statement: StatementSync, values: readonly string[]): R[] {
  const rows: R[] = [];
  for (let i = 0; i < values.length; i += LOOKUP_CHUNK) {
    const part = values.slice(i, i + LOOKUP_CHUNK);
    while (part.length < LOOKUP_CHUNK) part.push(part[0]!);
    rows.push(...(statement.all(...part) as R[]));
  }
  return rows;
}

function revisionMatches(expected: ExpectedRevision, actual: number | null): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === null;
  if (expected === 'stream_exists') return actual !== null;
  return actual === expected;
}

/** The embedded event log: one SQLite file in WAL mode; appends serialize through BEGIN IMMEDIATE. */
export function createSqliteEventLog(path: string, options: { cacheKiB?: number } = {}): EventLog {
  const db = openSqlite(path);
  // A reader that passes the log once (an export) gains nothing from the appenders' large cache.
  db.exec(options.cacheKiB === undefined ? EVENT_LOG_PRAGMAS : `PRAGMA cache_size = -${options.cacheKiB}`);
  db.exec(SCHEMA);
  const appended = new EventEmitter();
  appended.setMaxListeners(0);
  wakeOnOtherWriters(db, appended);

  inTransaction(db, () => {
    const existing = db.prepare(`SELECT value FROM log_meta WHERE key = 'archive_id'`).get() as
      { value: string } | undefined;
    if (!existing) db.prepare(`INSERT INTO log_meta (key, value) VALUES ('archive_id', ?)`).run(randomUUID());
  });

  const selectById = db.prepare('SELECT * FROM events WHERE id = ?');
  const selectStreamRevision = db.prepare('SELECT MAX(revision) AS revision FROM events WHERE stream = ?');
  const selectLastRecordedAt = db.prepare('SELECT recorded_at FROM events ORDER BY position DESC LIMIT 1');
  const insert = db.prepare(
    'INSERT INTO events (id, stream, revision, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const selectHead = db.prepare('SELECT COALESCE(MAX(position), 0) AS head FROM events');
  const placeholders = Array.from({ length: LOOKUP_CHUNK }, () => '?').join(',');
  const selectStreamRevisions = db.prepare(
    `SELECT stream, MAX(revision) AS revision FROM events WHERE stream IN (${placeholders}) GROUP BY stream`,
  );

  function currentRevision(stream: string): number | null {
    const row = selectStreamRevision.get(stream) as { revision: number | null };
    return row.revision;
  }

  /** recordedAt never goes backwards, so `since` (a time) and positions agree on order. */
  function nextRecordedAt(): string {
    const now = new Date().toISOString();
    const last = selectLastRecordedAt.get() as { recorded_at: string } | undefined;
    return last && last.recorded_at > now ? last.recorded_at : now;
  }

  let headSeen = 0;

  function noteAppended(events: Iterable<AppendedEvent>): void {
    let top = 0;
    for (const event of events) if (event.position > top) top = event.position;
    if (top > headSeen) headSeen = top;
    appended.emit('append', top);
  }

  /**
   * Last revision of the streams this connection appended to, valid while the log's head is still
   * `revisionsHead` (the head this connection left after its own last batch): any other append,
   * by this process or another, moves the head, and the cache is dropped.
   */
  const revisionCache = new Map<string, number>();
  let revisionsHead = -1;
  const REVISION_CACHE_LIMIT = 1_000_000;

  /**
   * Inserts a fresh event, or reports the stored one with its id. A plain INSERT refused by the id's
   * UNIQUE constraint is undone by SQLite without consuming a position (ON CONFLICT DO NOTHING
   * would consume one per skipped row, leaving gaps that a clean run does not have).
   */
  function insertUnlessStored(
    event: NewEvent,
    stream: string,
    revision: number,
    recordedAt: string,
  ): { ok: true; position: number } | { ok: false; stored: AppendedEvent } {
    try {
      const info = insert.run(
        event.id,
        stream,
        revision,
        event.type,
        JSON.stringify(event.data),
        event.metadata === undefined ? '{}' : JSON.stringify(event.metadata),
        recordedAt,
      );
      return { ok: true, position: Number(info.lastInsertRowid) };
    } catch (error) {
      const stored =
        (error as { errcode?: number }).errcode === SQLITE_CONSTRAINT_UNIQUE
          ? (selectById.get(event.id) as EventRow | undefined)
          : undefined;
      // Any other failure (or a (stream, revision) clash, which the revision cache rules out) aborts the batch.
      if (!stored) throw error;
      return {
        ok: false,
        stored: { id: stored.id, position: stored.position, revision: stored.revision, duplicate: true },
      };
    }
  }

  /**
   * The batch append inside one transaction: one revision look-up per 500 streams not cached, one
   * recordedAt, then one insert per event: a fresh event costs nothing more, and only an id the
   * log already holds is read back.
   */
  function appendGroups(groups: readonly StreamAppend[]): AppendedEvent[][] {
    const head = (selectHead.get() as { head: number }).head;
    if (head !== revisionsHead || revisionCache.size > REVISION_CACHE_LIMIT) revisionCache.clear();
    const unknown = new Set<string>();
    for (const group of groups)
      if (group.events.length > 0 && !revisionCache.has(group.stream)) unknown.add(group.stream);
    if (unknown.size > 0) {
      for (const stream of unknown) revisionCache.set(stream, -1);
      for (const row of lookupInChunks<{ stream: string; revision: number }>(selectStreamRevisions, [...unknown])) {
        revisionCache.set(row.stream, row.revision);
      }
    }
    const recordedAt = nextRecordedAt();
    // An id stored earlier in this batch reports its first event as a duplicate.
    const batch = new Map<string, AppendedEvent>();
    let top = head;
    const results = groups.map((group) =>
      group.events.map((event): AppendedEvent => {
        const earlier = batch.get(event.id);
        if (earlier) return { ...earlier, duplicate: true };
        const revision = revisionCache.get(group.stream)! + 1;
        const inserted = insertUnlessStored(event, group.stream, revision, recordedAt);
        if (!inserted.ok) return inserted.stored;
        revisionCache.set(group.stream, revision);
        const appendedEvent: AppendedEvent = { id: event.id, position: inserted.position, revision, duplicate: false };
        if (appendedEvent.position > top) top = appendedEvent.position;
        batch.set(event.id, appendedEvent);
        return appendedEvent;
      }),
    );
    revisionsHead = top;
    return results;
  }

  return {
    async archiveId() {
      const row = db.prepare(`SELECT value FROM log_meta WHERE key = 'archive_id'`).get() as { value: string };
      return row.value;
    },

    async append(
      stream: string,
      events: readonly NewEvent[],
      expected: ExpectedRevision = 'any',
    ): Promise<AppendResult> {
      const result = inTransaction(db, (): AppendResult => {
        // Results come back in input order; an id already stored, or repeated earlier in this batch,
        // is a duplicate reporting the stored (or first) event.
        const results: (AppendedEvent | undefined)[] = [];
        const fresh: { index: number; event: NewEvent }[] = [];
        const firstIndex = new Map<string, number>();
        events.forEach((event, index) => {
          const stored = selectById.get(event.id) as EventRow | undefined;
          if (stored)
            results[index] = { id: stored.id, position: stored.position, revision: stored.revision, duplicate: true };
          else if (!firstIndex.has(event.id)) {
            firstIndex.set(event.id, index);
            fresh.push({ index, event });
          }
        });
        const actual = currentRevision(stream);
        const finish = (): AppendedEvent[] =>
          events.map((event, index) => {
            const own = results[index];
            if (own) return own;
            const first = results[firstIndex.get(event.id)!]!;
            return { ...first, duplicate: true };
          });
        // A retry of an append that already landed is idempotent whatever revision it expected.
        if (fresh.length === 0) return { ok: true, events: finish(), revision: actual ?? -1 };
        if (!revisionMatches(expected, actual))
          return { ok: false, reason: 'wrong_expected_revision', actualRevision: actual };
        let revision = actual ?? -1;
        const recordedAt = nextRecordedAt();
        for (const { index, event } of fresh) {
          revision += 1;
          const info = insert.run(
            event.id,
            stream,
            revision,
            event.type,
            JSON.stringify(event.data),
            JSON.stringify(event.metadata ?? {}),
            recordedAt,
          );
          results[index] = { id: event.id, position: Number(info.lastInsertRowid), revision, duplicate: false };
        }
        return { ok: true, events: finish(), revision };
      });
      if (result.ok) noteAppended(result.events);
      return result;
    },

    async appendBatch(groups: readonly StreamAppend[]) {
      if (groups.length === 0) return [];
      let results: AppendedEvent[][];
      try {
        results = inTransaction(db, () => appendGroups(groups));
      } catch (error) {
        // Rolled back: what the cache learnt inside the transaction may not be stored.
        revisionsHead = -1;
        throw error;
      }
      noteAppended(results.flat());
      return results;
    },

    async readStream(stream: string, options: ReadStreamOptions = {}) {
      const rows =
        options.toPosition === undefined
          ? (db.prepare('SELECT * FROM events WHERE stream = ? ORDER BY revision').all(stream) as EventRow[])
          : (db
              .prepare('SELECT * FROM events WHERE stream = ? AND position <= ? ORDER BY revision')
              .all(stream, options.toPosition) as EventRow[]);
      return rows.map(toRecorded);
    },

    async streamRevision(stream: string) {
      return currentRevision(stream);
    },

    async readAll(options: ReadAllOptions) {
      const clauses = ['position > ?'];
      const params: (string | number)[] = [options.afterPosition];
      if (options.toPosition !== undefined) {
        clauses.push('position <= ?');
        params.push(options.toPosition);
      }
      if (options.typePrefixes && options.typePrefixes.length > 0) {
        clauses.push(`(${options.typePrefixes.map(() => 'substr(type, 1, ?) = ?').join(' OR ')})`);
        for (const prefix of options.typePrefixes) params.push(prefix.length, prefix);
      }
      params.push(options.limit);
      const rows = db
        .prepare(`SELECT * FROM events WHERE ${clauses.join(' AND ')} ORDER BY position LIMIT ?`)
        .all(...params) as EventRow[];
      return rows.map(toRecorded);
    },

    async headPosition() {
      return (selectHead.get() as { head: number }).head;
    },

    async waitForAppend(afterPosition: number, timeoutMs: number, signal?: AbortSignal) {
      if (headSeen > afterPosition || signal?.aborted) return;
      // Events appended before this call, by another connection or process, already exist: no need to sleep.
      const head = (selectHead.get() as { head: number }).head;
      if (head > headSeen) headSeen = head;
      if (headSeen > afterPosition) return;
      await sleepUntilAppend(appended, afterPosition, timeoutMs, signal);
    },

    positionBefore: async (time) => positionBefore(db, time),

    async close() {
      // Pending waits end now rather than holding the process open until their timeout.
      appended.emit('close');
      appended.removeAllListeners();
      db.close();
    },
  };
}

/** How often a process waiting for appends looks for commits made by other connections. */
const OTHER_WRITERS_INTERVAL_MS = 25;

/**
 * Wakes this connection's waiters (emits 'append' with the head on `appended`) when another
 * connection or process commits. SQLite notifies nobody across connections, so while someone waits
 * `PRAGMA data_version` — a memory read that changes whenever another connection commits — is checked
 * every OTHER_WRITERS_INTERVAL_MS. The first waiter also gets one check of the head right after its
 * listener is added, so a commit between its own head check and the watch starting is not missed.
 */
function wakeOnOtherWriters(db: DatabaseSync, appended: EventEmitter): void {
  const dataVersion = db.prepare('PRAGMA data_version');
  const selectHead = db.prepare('SELECT COALESCE(MAX(position), 0) AS head FROM events');
  const version = (): number => (dataVersion.get() as { data_version: number }).data_version;
  const head = (): number => (selectHead.get() as { head: number }).head;
  let timer: NodeJS.Timeout | undefined;
  let seen = 0;
  const stop = () => {
    clearInterval(timer);
    timer = undefined;
  };
  const check = () => {
    if (!db.isOpen) return stop();
    const now = version();
    if (now === seen) return;
    seen = now;
    appended.emit('append', head());
  };
  appended.on('newListener', (event: string) => {
    if (event !== 'append' || timer !== undefined || !db.isOpen) return;
    seen = version();
    const headNow = head();
    timer = setInterval(check, OTHER_WRITERS_INTERVAL_MS);
    timer.unref();
    queueMicrotask(() => appended.emit('append', headNow));
  });
  appended.on('removeListener', (event: string) => {
    if (event === 'append' && appended.listenerCount('append') === 0) stop();
  });
  appended.on('close', stop);
}

/**
 * EventLog.positionBefore: a binary search over positions (each probe one primary-key seek), relying
 * on recordedAt never decreasing in position order (nextRecordedAt). Invariant: every event at or
 * below `low` was recorded before `time`; every event above `high` at or after it.
 */
function positionBefore(db: DatabaseSync, time: string): number {
  const at = Date.parse(time);
  if (Number.isNaN(at)) throw new RangeError(`positionBefore: ${JSON.stringify(time)} is not an ISO 8601 time`);
  const firstFrom = db.prepare(
    'SELECT position, recorded_at FROM events WHERE position >= ? ORDER BY position LIMIT 1',
  );
  let low = 0;
  let high = (db.prepare('SELECT COALESCE(MAX(position), 0) AS head FROM events').get() as { head: number }).head;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    const row = firstFrom.get(mid) as { position: number; recorded_at: string } | undefined;
    if (row && Date.parse(row.recorded_at) < at) low = row.position;
    else high = mid - 1;
  }
  return low;
}
