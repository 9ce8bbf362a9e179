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
} from '../port.ts';

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

function revisionMatches(expected: ExpectedRevision, actual: number | null): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === null;
  if (expected === 'stream_exists') return actual !== null;
  return actual === expected;
}

/** The embedded event log: one SQLite file in WAL mode; appends serialize through BEGIN IMMEDIATE. */
export function createSqliteEventLog(path: string): EventLog {
  const db = openSqlite(path);
  db.exec(SCHEMA);
  const appended = new EventEmitter();
  appended.setMaxListeners(0);
  wakeOnOtherWriters(db, appended);

  inTransaction(db, () => {
    const existing = db.prepare(`SELECT value FROM log_meta WHERE key = 'archive_id'`).get() as { value: string } | undefined;
    if (!existing) db.prepare(`INSERT INTO log_meta (key, value) VALUES ('archive_id', ?)`).run(randomUUID());
  });

  const selectById = db.prepare('SELECT * FROM events WHERE id = ?');
  const selectStreamRevision = db.prepare('SELECT MAX(revision) AS revision FROM events WHERE stream = ?');
  const selectLastRecordedAt = db.prepare('SELECT recorded_at FROM events ORDER BY position DESC LIMIT 1');
  const insert = db.prepare(
    'INSERT INTO events (id, stream, revision, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const selectHead = db.prepare('SELECT COALESCE(MAX(position), 0) AS head FROM events');

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

  return {
    async archiveId() {
      const row = db.prepare(`SELECT value FROM log_meta WHERE key = 'archive_id'`).get() as { value: string };
      return row.value;
    },

    async append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision = 'any'): Promise<AppendResult> {
      const result = inTransaction(db, (): AppendResult => {
        // Results come back in input order; an id already stored, or repeated earlier in this batch,
        // is a duplicate reporting the stored (or first) event.
        const results: (AppendedEvent | undefined)[] = [];
        const fresh: { index: number; event: NewEvent }[] = [];
        const firstIndex = new Map<string, number>();
        events.forEach((event, index) => {
          const stored = selectById.get(event.id) as EventRow | undefined;
          if (stored) results[index] = { id: stored.id, position: stored.position, revision: stored.revision, duplicate: true };
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
        if (!revisionMatches(expected, actual)) return { ok: false, reason: 'wrong_expected_revision', actualRevision: actual };
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
      if (result.ok) {
        const top = Math.max(0, ...result.events.map((e) => e.position));
        if (top > headSeen) headSeen = top;
        appended.emit('append', top);
      }
      return result;
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
  const firstFrom = db.prepare('SELECT position, recorded_at FROM events WHERE position >= ? ORDER BY position LIMIT 1');
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
