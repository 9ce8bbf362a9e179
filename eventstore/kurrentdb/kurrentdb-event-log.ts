/**
 * The EventLog port on KurrentDB, through @kurrent/kurrentdb-client.
 *
 * Positions. KurrentDB places every event in $all at {commit, prepare}, byte offsets in its
 * transaction log. Without explicit transactions (never available over gRPC, removed from the
 * server) every appended event is its own self-committed record, so commit === prepare and both
 * grow strictly from one event to the next in $all order. The port's numeric `position` is that
 * offset as a JS number: exact up to 2^53 bytes (8 PiB) of log, checked on every conversion.
 * It is resumable: a $all read from {commit: p, prepare: p} starts AT the event at p (the server
 * treats the start as inclusive), and the adapter drops that event to give the port's exclusive
 * `afterPosition`. An event whose commit and prepare differ (a log written through the old TCP
 * transactions) is refused with an error rather than ordered wrongly. User events never sit at
 * position 0 (the log starts with the server's own records), so `afterPosition: 0` reads everything.
 *
 * Idempotency (idempotent-append.ts; the markers as stored, id-markers.ts). The server checks event
 * ids only best-effort, and not at all when the expected revision is the current one, so the
 * adapter decides itself, in a bounded number of round trips whatever the stream's length: every
 * event is preceded by an id marker (a `$`-typed event in its bucket stream
 * `pulseboard-ids-<bucket>`, filtered out of every $all read) naming the stream and revision the
 * event takes; an append reads the stream's revision, then its ids' markers, and appends only the
 * ids no marker proves stored, expecting that revision. Ids are therefore idempotent per stream —
 * the service derives each event id from a source message that always maps to the same stream
 * (events/ids.ts). A caller expectation (no_stream, stream_exists, a revision) is checked against
 * the observed revision; `any` retries until its events land. Events stored by a version of
 * pulseboard before the markers have none (see docs/decisions.md).
 *
 * System events ($-prefixed types or streams) are never returned. The archive id is a custom property
 * of the metadata of the stream `pulseboard-archive`, written once with expected state NO_STREAM.
 * `recordedAt` is the server's `created` time for the event (the leader's clock).
 * Every read requires the leader (the client's default lets a follower answer): a follower that lags
 * would answer a page short of an event the leader has already acknowledged, and a runner or `settle`
 * that trusts the short page moves its checkpoint past that event for good.
 * Event ids must be UUIDs (KurrentDB stores them as such); event data must be a JSON object, array or string.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { sleepUntilAppend } from '../append-signals.ts';
import {
  createAppendSubscription,
  type AppendSubscriptionState,
  type SubscriptionSource,
} from '../append-subscription.ts';
import { bucketLifetime, markerWriter, readMarkers, writeMarker } from './id-markers.ts';
import {
  DEFAULT_DEDUPE_WINDOW_SECONDS,
  appendIdempotent,
  type IdempotencyServer,
  type StoredRef,
} from './idempotent-append.ts';
import { namingTheServer } from './unavailable.ts';
import { appendGroupsPerStream } from './batch-append.ts';
import { filterFor, isSystem, jsonData, portPosition, readPositionAfter, toRecorded, toSafeNumber } from './records.ts';
import {
  BACKWARDS,
  END,
  FORWARDS,
  KurrentDBClient,
  NO_STREAM,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  type AppendStreamState,
  type JSONType,
  type Position,
  type ReadAllOptions as KurrentReadAll,
  type ReadPosition,
  type RecordedEvent as KurrentRecordedEvent,
} from '@kurrent/kurrentdb-client';
import {
  type AppendResult,
  type EventLog,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
} from '../port.ts';

const ARCHIVE_STREAM = 'pulseboard-archive';
const ARCHIVE_METADATA_STREAM = `$$${ARCHIVE_STREAM}`;
const ARCHIVE_KEY = 'pulseboardArchiveId';
/** Events read per backward page while looking for the newest non-system event. */
const HEAD_PAGE = 32;
/** Events per page of each of the two scans of positionBefore. */
const SEEK_PAGE = 512;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type KurrentDbEventLogOptions = {
  /**
   * Hears each change of the append subscription's state (connecting, live, reconnecting, closed),
   * with the error behind a reconnect: for one log line per change and for readiness reports.
   */
  onSubscriptionState?: (state: AppendSubscriptionState, error?: unknown) => void;
  /** The client to use instead of one opened from the connection string (tests: an in-memory stand-in). */
  client?: KurrentDBClient;
  /** How long a stored id is recognised (the marker buckets' `$maxAge`); 7 days unless given. */
  dedupeWindowSeconds?: number;
};

export function createKurrentDbEventLog(connectionString: string, options: KurrentDbEventLogOptions = {}): EventLog {
  return namingTheServer(openKurrentDbEventLog(connectionString, options), connectionString);
}

function openKurrentDbEventLog(connectionString: string, options: KurrentDbEventLogOptions): EventLog {
  const client = options.client ?? KurrentDBClient.connectionString(connectionString);
  const signals = new EventEmitter();
  signals.setMaxListeners(0);
  let headSeen = 0;
  let closed = false;
  let archive: string | undefined;

  // One filtered $all subscription from the end, shared by every waiter of this log.
  const source: SubscriptionSource = {
    open(handlers) {
      const subscription = client.subscribeToAll({
        fromPosition: END,
        filter: excludeSystemEvents(),
        requiresLeader: true,
      });
      let over = false;
      const fail = (error: unknown) => {
        if (over) return;
        over = true;
        void subscription.unsubscribe().catch(() => undefined);
        handlers.failed(error);
      };
      subscription.on('confirmation', () => handlers.confirmed());
      subscription.on('data', (resolved) => {
        const event = resolved.event;
        if (!event || isSystem(event)) return;
        try {
          const position = portPosition(event.position, event);
          if (position > headSeen) headSeen = position;
          handlers.appended(position);
        } catch (error) {
          fail(error);
        }
      });
      subscription.on('error', fail);
      subscription.on('end', () => fail(new Error('the KurrentDB subscription ended')));
      return {
        async close() {
          over = true;
          await subscription.unsubscribe().catch(() => undefined);
        },
      };
    },
  };
  const subscription = createAppendSubscription(source, {
    signals,
    ...(options.onSubscriptionState ? { onState: options.onSubscriptionState } : {}),
  });

  const lifetime = bucketLifetime(options.dedupeWindowSeconds ?? DEFAULT_DEDUPE_WINDOW_SECONDS);
  const writeMarkers = markerWriter(client, lifetime);

  /** The idempotency protocol's server calls (idempotent-append.ts), each one round trip. */
  function idempotencyServer(payloads: ReadonlyMap<NewEvent, JSONType>): IdempotencyServer {
    const ref = (event: KurrentRecordedEvent): StoredRef => ({
      id: event.id,
      position: portPosition(event.position, event),
      revision: toSafeNumber(event.revision, 'stream revision'),
    });
    return {
      lastRevision: (stream) => lastRevision(stream),
      readMarkers: (eventId) => readMarkers(client, eventId),
      async readAt(stream, revision) {
        const [event] = await readRevisions(stream, revision, 1);
        return event && event.revision === BigInt(revision) ? ref(event) : null;
      },
      async readRange(stream, fromRevision, count) {
        return (await readRevisions(stream, fromRevision, count)).map(ref);
      },
      writeMarker: (eventId, marker) => writeMarker(client, lifetime, eventId, marker),
      writeMarkers,
      async appendExpecting(stream, events, expected) {
        const streamState: AppendStreamState = expected === null ? NO_STREAM : BigInt(expected);
        try {
          await client.appendToStream(
            stream,
            events.map((event) =>
              jsonEvent({ id: event.id, type: event.type, data: payloads.get(event)!, metadata: event.metadata ?? {} }),
            ),
            { streamState, requiresLeader: true },
          );
          return 'ok';
        } catch (error) {
          if (error instanceof WrongExpectedVersionError) return 'conflict';
          throw error;
        }
      },
    };
  }

  async function readRevisions(stream: string, fromRevision: number, count: number): Promise<KurrentRecordedEvent[]> {
    const events: KurrentRecordedEvent[] = [];
    try {
      for await (const resolved of client.readStream(stream, {
        fromRevision: BigInt(fromRevision),
        maxCount: count,
        requiresLeader: true,
      })) {
        if (resolved.event) events.push(resolved.event);
      }
    } catch (error) {
      if (!(error instanceof StreamNotFoundError)) throw error;
    }
    return events;
  }

  async function lastRevision(stream: string): Promise<number | null> {
    try {
      for await (const resolved of client.readStream(stream, {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
        requiresLeader: true,
      })) {
        if (resolved.event) return toSafeNumber(resolved.event.revision, 'stream revision');
      }
    } catch (error) {
      if (!(error instanceof StreamNotFoundError)) throw error;
    }
    return null;
  }

  async function headPosition(): Promise<number> {
    // A backward read filtered on event type; events of user types in system streams are skipped too.
    let from: ReadPosition = END;
    for (;;) {
      let seen = 0;
      let last: { commit: bigint; prepare: bigint } | undefined;
      const page: KurrentReadAll = {
        direction: BACKWARDS,
        fromPosition: from,
        maxCount: HEAD_PAGE,
        filter: excludeSystemEvents(),
        requiresLeader: true,
      };
      for await (const resolved of client.readAll(page)) {
        seen += 1;
        const event = resolved.event;
        if (!event) continue;
        if (!isSystem(event)) return portPosition(event.position, event);
        last = event.position;
      }
      if (seen < HEAD_PAGE || !last) return 0;
      // Backward reads take the position after a record; the record's own position excludes it.
      from = last;
    }
  }

  function noteHead(position: number): void {
    if (position > headSeen) headSeen = position;
    signals.emit('append', position);
  }

  async function readArchiveId(): Promise<string | null> {
    const result = await client.getStreamMetadata(ARCHIVE_STREAM, { requiresLeader: true });
    const value = result.metadata?.[ARCHIVE_KEY];
    return typeof value === 'string' && value.length > 0 ? value : null;
  }

  return {
    async archiveId() {
      if (archive) return archive;
      let id = await readArchiveId();
      if (id === null) {
        // setStreamMetadata drops its expected-revision option (client 1.3.1), so the metadata event
        // is appended directly: the first writer wins, every later one reads the winner's id.
        try {
          await client.appendToStream(
            ARCHIVE_METADATA_STREAM,
            jsonEvent({ type: '$metadata', data: { [ARCHIVE_KEY]: randomUUID() } }),
            {
              streamState: NO_STREAM,
              requiresLeader: true,
            },
          );
        } catch (error) {
          if (!(error instanceof WrongExpectedVersionError)) throw error;
        }
        id = await readArchiveId();
      }
      if (id === null) throw new Error(`KurrentDB stream metadata of ${ARCHIVE_STREAM} holds no ${ARCHIVE_KEY}`);
      archive = id;
      return id;
    },

    async append(
      stream: string,
      events: readonly NewEvent[],
      expected: ExpectedRevision = 'any',
    ): Promise<AppendResult> {
      // Bad input is refused before anything is read or written.
      const payloads = new Map<NewEvent, JSONType>();
      for (const event of events) {
        if (!UUID.test(event.id))
          throw new TypeError(`event id ${JSON.stringify(event.id)} is not a UUID (KurrentDB requires one)`);
        payloads.set(event, jsonData(event));
      }
      const result = await appendIdempotent(idempotencyServer(payloads), stream, events, expected);
      if (result.ok) {
        const top = result.events.reduce((max, event) => (event.duplicate ? max : Math.max(max, event.position)), 0);
        if (top > 0) noteHead(top);
      }
      return result;
    },

    async readStream(stream: string, options: ReadStreamOptions = {}) {
      const events: RecordedEvent[] = [];
      try {
        for await (const resolved of client.readStream(stream, { requiresLeader: true })) {
          const event = resolved.event;
          if (!event) continue;
          const position = portPosition(event.position, event);
          if (options.toPosition !== undefined && position > options.toPosition) break;
          events.push(toRecorded(event, position));
        }
      } catch (error) {
        if (!(error instanceof StreamNotFoundError)) throw error;
      }
      return events;
    },

    async streamRevision(stream: string) {
      return lastRevision(stream);
    },

    async readAll(options: ReadAllOptions) {
      const { limit, toPosition } = options;
      const filter = filterFor(options.typePrefixes);
      const events: RecordedEvent[] = [];
      if (filter === 'nothing' || limit <= 0) return events;
      let cursor = options.afterPosition;
      for (;;) {
        // One more than needed: the server's start is inclusive, and the event at the cursor is not wanted.
        const want = limit - events.length + 1;
        let seen = 0;
        let done = false;
        const page: KurrentReadAll = {
          direction: FORWARDS,
          fromPosition: readPositionAfter(cursor),
          maxCount: want,
          filter,
          requiresLeader: true,
        };
        for await (const resolved of client.readAll(page)) {
          seen += 1;
          const event = resolved.event;
          if (!event) continue;
          const position = portPosition(event.position, event);
          if (position <= cursor) continue;
          cursor = position;
          if (toPosition !== undefined && position > toPosition) {
            done = true;
            break;
          }
          if (isSystem(event)) continue;
          events.push(toRecorded(event, position));
          if (events.length === limit) {
            done = true;
            break;
          }
        }
        // Fewer than asked for: the end of the log. Otherwise skipped events made room for another page.
        if (done || seen < want) return events;
      }
    },

    headPosition,

    appendBatch(groups: readonly StreamAppend[]) {
      return appendGroupsPerStream((stream, events) => this.append(stream, events, 'any'), groups);
    },

    /**
     * $all cannot be entered at a guessed position (positions are byte offsets; a read from inside a
     * record is refused) and has no index by time, so the boundary is found by two scans from the
     * ends, one page of each in turn: forwards from the start to the first event recorded at or after
     * `time`, backwards from the end to the newest one recorded before it. Whichever meets the
     * boundary first answers, so the cost is the smaller side of the log, not the whole of it; an
     * export of a recent range reads only the events after its start.
     */
    async positionBefore(time: string) {
      const at = Date.parse(time);
      if (Number.isNaN(at)) throw new RangeError(`positionBefore: ${JSON.stringify(time)} is not an ISO 8601 time`);
      let forwardCursor = 0;
      let forwardLast = 0;
      let backwardFrom: ReadPosition = END;
      for (;;) {
        let seen = 0;
        for await (const resolved of client.readAll({
          direction: FORWARDS,
          fromPosition: readPositionAfter(forwardCursor),
          maxCount: SEEK_PAGE,
          filter: excludeSystemEvents(),
          requiresLeader: true,
        })) {
          seen += 1;
          const event = resolved.event;
          if (!event) continue;
          const position = portPosition(event.position, event);
          if (position <= forwardCursor) continue;
          forwardCursor = position;
          if (isSystem(event)) continue;
          if (event.created.getTime() >= at) return forwardLast;
          forwardLast = position;
        }
        if (seen < SEEK_PAGE) return forwardLast;

        seen = 0;
        let oldest: Position | undefined;
        for await (const resolved of client.readAll({
          direction: BACKWARDS,
          fromPosition: backwardFrom,
          maxCount: SEEK_PAGE,
          filter: excludeSystemEvents(),
          requiresLeader: true,
        })) {
          seen += 1;
          const event = resolved.event;
          if (!event) continue;
          oldest = event.position;
          if (!isSystem(event) && event.created.getTime() < at) return portPosition(event.position, event);
        }
        if (seen < SEEK_PAGE || !oldest) return 0;
        // Backward reads take the position after a record; the record's own position excludes it.
        backwardFrom = oldest;
      }
    },

    async waitForAppend(afterPosition: number, timeoutMs: number, signal?: AbortSignal) {
      if (closed || signal?.aborted || headSeen > afterPosition) return;
      const started = Date.now();
      // Live before the head is read: an append after the read is then delivered by the subscription.
      // A server that neither confirms nor refuses holds a waiter no longer than its own timeout.
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
      const head = await headPosition();
      if (head > headSeen) headSeen = head;
      if (head > afterPosition || closed || signal?.aborted) return;
      const remaining = timeoutMs - (Date.now() - started);
      if (remaining <= 0) return;
      await sleepUntilAppend(signals, afterPosition, remaining, signal);
    },

    subscriptionState: () => subscription.state(),

    async close() {
      closed = true;
      signals.emit('close');
      signals.removeAllListeners();
      await subscription.close();
      await client.dispose();
    },
  };
}
