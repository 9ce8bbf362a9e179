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
 * Idempotency (idempotent-append.ts). The server checks event ids only best-effort, and not at all
 * when the expected revision is the current one, so the adapter decides itself, in a bounded number of
 * round trips whatever the stream's length: every event is preceded by an id marker (a `$`-typed event
 * in `pulseboard-id-<event id>`, filtered out of every $all read) naming the stream and revision the
 * event takes; an append reads the stream's revision, then its ids' markers, and appends only the ids
 * no marker proves stored, expecting that revision. Ids are therefore idempotent per stream — the
 * service derives each event id from a source message that always maps to the same stream
 * (events/ids.ts). A caller expectation (no_stream, stream_exists, a revision) is checked against the
 * observed revision; `any` retries until its events land. Events stored by a version of pulseboard
 * before the markers have none (see docs/decisions.md).
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
import {
  DEFAULT_DEDUPE_WINDOW_SECONDS,
  ID_MARKER_TYPE,
  appendIdempotent,
  backfillIdMarkers,
  markerStream,
  type BackfillProgress,
  type IdMarker,
  type IdempotencyServer,
  type StoredRef,
} from './idempotent-append.ts';
import {
  ANY,
  BACKWARDS,
  END,
  FORWARDS,
  KurrentDBClient,
  NO_STREAM,
  START,
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
  eventTypeFilter,
  excludeSystemEvents,
  jsonEvent,
  type AppendStreamState,
  type Filter,
  type JSONType,
  type Position,
  type ReadAllOptions as KurrentReadAll,
  type ReadPosition,
  type RecordedEvent as KurrentRecordedEvent,
} from '@kurrent/kurrentdb-client';
import { recogniseDriverOutages } from '../../config/driver-outages.ts';
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

const ARCHIVE_STREAM = 'pulseboard-archive';
const ARCHIVE_METADATA_STREAM = `$$${ARCHIVE_STREAM}`;
const ARCHIVE_KEY = 'pulseboardArchiveId';
/** Events read per backward page while looking for the newest non-system event. */
const HEAD_PAGE = 32;
/** Events per page of each of the two scans of positionBefore. */
const SEEK_PAGE = 512;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function toSafeNumber(value: bigint, what: string): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`KurrentDB ${what} ${value} is outside the range pulseboard positions can represent`);
  }
  return Number(value);
}

/** The port position of an event: its commit position, which equals its prepare position (see top). */
function portPosition(position: Position | undefined, event: { streamId: string; revision: bigint }): number {
  if (!position) {
    throw new Error(
      `KurrentDB returned ${event.streamId}@${event.revision} without a log position (the server must be 22.6 or newer)`,
    );
  }
  if (position.commit !== position.prepare) {
    throw new Error(
      `KurrentDB event ${event.streamId}@${event.revision} was written inside an explicit transaction ` +
        `(commit ${position.commit} ≠ prepare ${position.prepare}); pulseboard needs one log record per event`,
    );
  }
  return toSafeNumber(position.commit, 'log position');
}

function readPositionAfter(position: number): ReadPosition {
  return position <= 0 ? START : { commit: BigInt(position), prepare: BigInt(position) };
}

function isSystem(event: { type: string; streamId: string }): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

function dataOf(event: KurrentRecordedEvent): unknown {
  if (event.isJson) return event.data;
  // Not written by pulseboard (it only writes JSON); still read it if its bytes are JSON.
  const text = Buffer.from(event.data).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`KurrentDB event ${event.streamId}@${event.revision} holds binary data, not JSON`);
  }
}

function metadataOf(event: KurrentRecordedEvent): Record<string, unknown> {
  const metadata: unknown = event.metadata;
  if (
    typeof metadata === 'object' &&
    metadata !== null &&
    !Array.isArray(metadata) &&
    !(metadata instanceof Uint8Array)
  ) {
    return metadata as Record<string, unknown>;
  }
  return {};
}

/**
 * A recorded event as plain data, metadata included (the client library has already decoded the
 * metadata bytes as JSON for every event it returns).
 */
function toRecorded(event: KurrentRecordedEvent, position: number): RecordedEvent {
  return {
    id: event.id,
    stream: event.streamId,
    revision: toSafeNumber(event.revision, 'stream revision'),
    position,
    type: event.type,
    data: dataOf(event),
    metadata: metadataOf(event),
    recordedAt: event.created.toISOString(),
  };
}

function jsonData(event: NewEvent): JSONType {
  const { data } = event;
  if (typeof data === 'string' || Array.isArray(data)) return data;
  if (typeof data === 'object' && data !== null) return data as Record<string, unknown>;
  throw new TypeError(
    `event ${event.id}: KurrentDB stores a JSON object, array or string as event data, not ${data === null ? 'null' : typeof data}`,
  );
}

/** The filter for a readAll; 'nothing' when the prefixes can only select system events. */
function filterFor(prefixes: readonly string[] | undefined): Filter | 'nothing' {
  if (prefixes === undefined || prefixes.length === 0 || prefixes.includes('')) return excludeSystemEvents();
  const user = prefixes.filter((prefix) => !prefix.startsWith('$'));
  if (user.length === 0) return 'nothing';
  return eventTypeFilter({ prefixes: [...user] });
}

/**
 * The client reports a server it cannot reach as a bare "UnavailableError"; this names the server
 * (without credentials) so an operator reading one line knows what to start.
 */
/** gRPC UNAVAILABLE, as the client's typed error or as a raw gRPC status (status 14). */
export function isUnavailable(error: unknown): boolean {
  return (
    error instanceof UnavailableError ||
    (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 14)
  );
}

/** A server down or unreachable: a retry can outlive it (service/store-failures.ts). */
recogniseDriverOutages((error) => error instanceof UnavailableError);

function namingTheServer(log: EventLog, connectionString: string): EventLog {
  const where = connectionString.replace(/\/\/[^@/]*@/, '//');
  const translate = (error: unknown): never => {
    if (isUnavailable(error))
      throw new EventLogUnavailableError(`KurrentDB at ${where} does not answer (unavailable)`, { cause: error });
    throw error;
  };
  return {
    archiveId: () => log.archiveId().catch(translate),
    append: (stream, events, expected) => log.append(stream, events, expected).catch(translate),
    appendBatch: (groups) => log.appendBatch(groups).catch(translate),
    readStream: (stream, options) => log.readStream(stream, options).catch(translate),
    streamRevision: (stream) => log.streamRevision(stream).catch(translate),
    readAll: (options) => log.readAll(options).catch(translate),
    headPosition: () => log.headPosition().catch(translate),
    positionBefore: (time) => log.positionBefore(time).catch(translate),
    waitForAppend: (afterPosition, timeoutMs, signal) =>
      log.waitForAppend(afterPosition, timeoutMs, signal).catch(translate),
    subscriptionState: () => log.subscriptionState?.() ?? 'idle',
    close: () => log.close().catch(translate),
  };
}

/** A marker as stored in its bucket: the id it stands for, and where that id's event goes. */
type StoredMarker = IdMarker & { id: string };

async function readMarkers(client: KurrentDBClient, eventId: string): Promise<IdMarker[]> {
  const id = eventId.toLowerCase();
  const markers: IdMarker[] = [];
  try {
    for await (const resolved of client.readStream(markerStream(id), { requiresLeader: true })) {
      const event = resolved.event;
      const marker = event?.type === ID_MARKER_TYPE ? (event.data as Partial<StoredMarker>) : undefined;
      if (marker && marker.id === id && typeof marker.stream === 'string' && Number.isSafeInteger(marker.revision)) {
        markers.push({ stream: marker.stream, revision: marker.revision! });
      }
    }
  } catch (error) {
    if (!(error instanceof StreamNotFoundError)) throw error;
  }
  return markers;
}

const markerEvent = (eventId: string, marker: IdMarker) =>
  jsonEvent({ type: ID_MARKER_TYPE, data: { id: eventId.toLowerCase(), ...marker } });

/**
 * The metadata giving a marker bucket its lifetime, written by a process the first time it writes to
 * the bucket (the server keeps only a metastream's last record, so repeats cost nothing after a scavenge).
 */
function bucketLifetime(windowSeconds: number): {
  written: Set<string>;
  /** Lifetimes on their way: markers of the same bucket written meanwhile wait for it rather than send it again. */
  sending: Map<string, Promise<void>>;
  metadata: () => ReturnType<typeof jsonEvent>;
} {
  return {
    written: new Set(),
    sending: new Map(),
    metadata: () => jsonEvent({ type: '$metadata', data: { $maxAge: windowSeconds } }),
  };
}
type BucketLifetime = ReturnType<typeof bucketLifetime>;

function giveLifetime(client: KurrentDBClient, lifetime: BucketLifetime, bucket: string): Promise<void> {
  if (lifetime.written.has(bucket)) return Promise.resolve();
  let sent = lifetime.sending.get(bucket);
  if (!sent) {
    sent = client
      .appendToStream(`$$${bucket}`, lifetime.metadata(), { requiresLeader: true })
      .then(() => void lifetime.written.add(bucket))
      .finally(() => lifetime.sending.delete(bucket));
    lifetime.sending.set(bucket, sent);
  }
  return sent;
}

async function writeMarker(
  client: KurrentDBClient,
  lifetime: BucketLifetime,
  eventId: string,
  marker: IdMarker,
): Promise<void> {
  const bucket = markerStream(eventId);
  await giveLifetime(client, lifetime, bucket);
  await client.appendToStream(bucket, markerEvent(eventId, marker), { requiresLeader: true });
}

/** Markers per multi-stream append: a server transaction has a size limit. */
const MARKERS_PER_MULTI_APPEND = 500;

/**
 * Writes many id markers, each to its own marker stream: in one multi-stream append per 500 where the
 * server has them (KurrentDB 25.1+), else one append each, in parallel. The first multi-stream appends
 * of a log are checked by reading one of their markers back the way the protocol reads them; a server
 * without the call, any error from it but UNAVAILABLE, or a marker that does not read back turns the
 * multi-stream path off for this log, and the markers are written (again: markers are only added, and
 * a repeated one changes nothing) one append each. So the worst case is the one-by-one cost, never a
 * marker that is missed.
 */
type MarkerWrite = { eventId: string; marker: IdMarker };

function markerWriter(
  client: KurrentDBClient,
  lifetime: BucketLifetime,
): (markers: readonly MarkerWrite[]) => Promise<void> {
  let multi: 'untried' | 'verified' | 'off' = 'untried';
  const oneByOne = async (markers: readonly MarkerWrite[]) => {
    await Promise.all(markers.map(({ eventId, marker }) => writeMarker(client, lifetime, eventId, marker)));
  };
  return async (markers) => {
    if (markers.length < 2 || multi === 'off') return oneByOne(markers);
    const lifetimesSent: string[] = [];
    try {
      for (let i = 0; i < markers.length; i += MARKERS_PER_MULTI_APPEND) {
        const part = markers.slice(i, i + MARKERS_PER_MULTI_APPEND);
        // A bucket's lifetime rides in the same call the first time this process writes to it.
        const buckets = part.map(({ eventId }) => markerStream(eventId));
        const fresh = [...new Set(buckets.filter((bucket) => !lifetime.written.has(bucket)))];
        const state = ANY as AppendStreamState;
        await client.multiStreamAppend([
          ...fresh.map((bucket) => ({
            streamName: `$$${bucket}`,
            expectedState: state,
            events: [lifetime.metadata()],
          })),
          ...part.map(({ eventId, marker }, k) => ({
            streamName: buckets[k]!,
            expectedState: state,
            events: [markerEvent(eventId, marker)],
          })),
        ]);
        for (const bucket of fresh) lifetime.written.add(bucket);
        lifetimesSent.push(...fresh);
      }
      if (multi === 'verified') return;
      const [{ eventId, marker }] = markers as [{ eventId: string; marker: IdMarker }];
      const back = await readMarkers(client, eventId);
      if (back.some((m) => m.stream === marker.stream && m.revision === marker.revision)) {
        if (multi === 'untried') multi = 'verified';
        return;
      }
    } catch (error) {
      // A server that does not answer fails the one-by-one writes too: that error is the append's.
      if (isUnavailable(error)) throw error;
    }
    multi = 'off';
    // What the multi-stream path wrote is not trusted: the buckets get their lifetime again one by one.
    for (const bucket of lifetimesSent) lifetime.written.delete(bucket);
    return oneByOne(markers);
  };
}

/**
 * Writes the id markers of every event a log stored before this version (docs/decisions.md), so a
 * source message sent again is recognised. Run once per log, before ingesting into it with this version.
 */
export async function backfillKurrentDbIdMarkers(
  connectionString: string,
  onProgress?: (progress: BackfillProgress) => void,
): Promise<BackfillProgress> {
  const client = KurrentDBClient.connectionString(connectionString);
  const log = createKurrentDbEventLog(connectionString);
  const lifetime = bucketLifetime(DEFAULT_DEDUPE_WINDOW_SECONDS);
  try {
    const server = {
      readMarkers: (id: string) => readMarkers(client, id),
      writeMarker: (id: string, m: IdMarker) => writeMarker(client, lifetime, id, m),
    };
    return await backfillIdMarkers(server, log, { onProgress });
  } finally {
    await log.close();
    await client.dispose();
  }
}

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

/** Streams appended to at once by one batch append. */
const BATCH_STREAMS_IN_FLIGHT = 16;

/**
 * The batch append on KurrentDB, which has no transaction across streams: each stream's groups are
 * joined into one append (one idempotency read and one write per stream per batch, atomic for that
 * stream, so every group stays all or nothing), and up to 16 streams are appended concurrently.
 * Groups of one stream keep their input order; the global order of different streams may differ
 * from it, as for concurrent sources.
 */
async function appendGroupsPerStream(
  append: (stream: string, events: readonly NewEvent[]) => Promise<AppendResult>,
  groups: readonly StreamAppend[],
): Promise<AppendedEvent[][]> {
  const byStream = new Map<string, number[]>();
  groups.forEach((group, index) => {
    const indexes = byStream.get(group.stream);
    if (indexes) indexes.push(index);
    else byStream.set(group.stream, [index]);
  });
  const results: AppendedEvent[][] = groups.map(() => []);
  const pending = [...byStream];
  // A shared cursor, not shift(): a batch may hold thousands of streams, and each shift moves the rest.
  let cursor = 0;
  const worker = async (): Promise<void> => {
    for (let next = pending[cursor++]; next; next = pending[cursor++]) {
      const [stream, indexes] = next;
      const result = await append(
        stream,
        indexes.flatMap((index) => groups[index]!.events),
      );
      if (!result.ok) throw new Error(`event log refused an 'any' append to ${stream}: ${result.reason}`);
      let offset = 0;
      for (const index of indexes) {
        const count = groups[index]!.events.length;
        results[index] = result.events.slice(offset, offset + count);
        offset += count;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(BATCH_STREAMS_IN_FLIGHT, pending.length) }, worker));
  return results;
}
