/**
 * The event log port. Every adapter passes test/contract/eventlog.contract.ts unchanged.
 */

export type NewEvent = {
  /**
   * Caller-chosen id: appending an id that is already stored in the stream is a no-op reporting the
   * stored position (ids derive from the source message, which always maps to one stream).
   */
  id: string;
  type: string;
  data: unknown;
  metadata?: Record<string, unknown>;
};

export type RecordedEvent = {
  id: string;
  stream: string;
  /** 0-based revision within the stream. */
  revision: number;
  /** Global position, strictly increasing across the whole log (not necessarily contiguous). */
  position: number;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  /** When the log stored the event (ISO 8601). */
  recordedAt: string;
};

/** `any`, the stream must not exist yet, must exist, or must be at exactly this revision (last revision). */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

export type AppendedEvent = { id: string; position: number; revision: number; duplicate: boolean };

/** Results come back in input order; an id repeated inside one batch is a duplicate of its first occurrence. */
export type AppendResult =
  | { ok: true; events: AppendedEvent[]; /** revision of the stream after the append */ revision: number }
  | { ok: false; reason: 'wrong_expected_revision'; actualRevision: number | null };

/** One group of a batch append: events for one stream, appended as `append(stream, events, 'any')` would. */
export type StreamAppend = { stream: string; events: readonly NewEvent[] };

export type ReadAllOptions = {
  /** Exclusive: events with position greater than this. 0 reads from the start. */
  afterPosition: number;
  /** Only events whose type starts with one of these prefixes. */
  typePrefixes?: readonly string[];
  /** At most this many events. */
  limit: number;
  /** Inclusive upper bound on position. */
  toPosition?: number;
};

export type ReadStreamOptions = {
  /** Inclusive upper bound on global position (as-of reads). */
  toPosition?: number;
};

export interface EventLog {
  /** Identifies this log; delta cursors minted against another log are refused with 409. */
  archiveId(): Promise<string>;
  append(stream: string, events: readonly NewEvent[], expected?: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends many groups in input order, each as `append(group.stream, group.events, 'any')` would
   * (idempotent ids, per-stream revisions; an id seen earlier in the batch is a duplicate of it), at
   * the cost of one batch rather than one append per group. Each group is all or nothing; the
   * embedded log stores the whole batch in one transaction. Results: one list per group, in order.
   */
  appendBatch(groups: readonly StreamAppend[]): Promise<AppendedEvent[][]>;
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Last revision of a stream, null when it does not exist. */
  streamRevision(stream: string): Promise<number | null>;
  readAll(options: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Position of the newest event, 0 when empty. */
  headPosition(): Promise<number>;
  /**
   * Resolves once an event past `afterPosition` may exist, after `timeoutMs`, on abort, or on close.
   * Lets subscribers sleep between polls without missing appends from this process, another
   * connection or another process.
   */
  waitForAppend(afterPosition: number, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * The position of the newest event recorded before `time` (ISO 8601), 0 when there is none: a
   * readAll from it returns exactly the events recorded at or after `time`, because recordedAt never
   * decreases in log order. Lets a time range start without reading the log before it.
   */
  positionBefore(time: string): Promise<number>;
  /**
   * The state of the live subscription behind waitForAppend, where the log has one (KurrentDB's
   * $all subscription, PostgreSQL's LISTEN connection): `idle` until something first waits, `live`
   * while appends are delivered, `reconnecting` while they are not (waiters then sleep until it is
   * back, or on PostgreSQL read the head every second). Absent: appends are signalled without one.
   */
  subscriptionState?(): SubscriptionState;
  close(): Promise<void>;
}

export type SubscriptionState = 'idle' | 'connecting' | 'live' | 'reconnecting' | 'closed';

/**
 * Thrown by any EventLog call when the log's server cannot be reached (gRPC UNAVAILABLE, a PostgreSQL
 * connection refused or lost): the one error a background loop can treat as "wait and retry" rather
 * than as a bug.
 */
export class EventLogUnavailableError extends Error {
  override name = 'EventLogUnavailableError';
}
