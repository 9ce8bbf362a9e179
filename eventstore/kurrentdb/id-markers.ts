/**
 * The id markers of the idempotency protocol (idempotent-append.ts) as KurrentDB stores them: read
 * from their bucket stream, written one by one or many in one multi-stream append, each bucket given
 * its lifetime (the dedupe window) the first time a process writes to it; and the backfill of a log
 * stored before markers existed.
 */
import {
  ANY,
  StreamNotFoundError,
  jsonEvent,
  type AppendStreamState,
  type KurrentDBClient,
} from '@kurrent/kurrentdb-client';
import type { EventLog } from '../port.ts';
import {
  DEFAULT_DEDUPE_WINDOW_SECONDS,
  ID_MARKER_TYPE,
  backfillIdMarkers,
  markerStream,
  type BackfillProgress,
  type IdMarker,
} from './idempotent-append.ts';
import { isUnavailable } from './unavailable.ts';

/** A marker as stored in its bucket: the id it stands for, and where that id's event goes. */
type StoredMarker = IdMarker & { id: string };

export async function readMarkers(client: KurrentDBClient, eventId: string): Promise<IdMarker[]> {
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
 * The metadata giving a marker bucket its lifetime. A process reads a bucket's metadata the first time it
 * writes to it and writes the lifetime only where the bucket lacks it (a new bucket, a changed window):
 * a restart costs at most one read per bucket it then writes to, and no write to a bucket that has it.
 */
export function bucketLifetime(windowSeconds: number): {
  seconds: number;
  /** Buckets known to carry this lifetime. */
  written: Set<string>;
  /** Lifetimes on their way: markers of the same bucket written meanwhile wait for it rather than send it again. */
  sending: Map<string, Promise<void>>;
  /** Metadata reads on their way, shared by the appends that want the same bucket meanwhile. */
  reading: Map<string, Promise<boolean>>;
  metadata: () => ReturnType<typeof jsonEvent>;
} {
  return {
    seconds: windowSeconds,
    written: new Set(),
    sending: new Map(),
    reading: new Map(),
    metadata: () => jsonEvent({ type: '$metadata', data: { $maxAge: windowSeconds } }),
  };
}
export type BucketLifetime = ReturnType<typeof bucketLifetime>;

/** Whether `bucket` already carries the lifetime (marked known if so): one read of its metadata. */
function hasLifetime(client: KurrentDBClient, lifetime: BucketLifetime, bucket: string): Promise<boolean> {
  let read = lifetime.reading.get(bucket);
  if (!read) {
    read = client
      .getStreamMetadata(bucket, { requiresLeader: true })
      .then(({ metadata }) => {
        const carries = metadata?.maxAge === lifetime.seconds;
        if (carries) lifetime.written.add(bucket);
        return carries;
      })
      .finally(() => lifetime.reading.delete(bucket));
    lifetime.reading.set(bucket, read);
  }
  return read;
}

function giveLifetime(client: KurrentDBClient, lifetime: BucketLifetime, bucket: string): Promise<void> {
  if (lifetime.written.has(bucket)) return Promise.resolve();
  let sent = lifetime.sending.get(bucket);
  if (!sent) {
    sent = hasLifetime(client, lifetime, bucket)
      .then(async (carries) => {
        if (carries) return;
        await client.appendToStream(`$$${bucket}`, lifetime.metadata(), { requiresLeader: true });
        lifetime.written.add(bucket);
      })
      .finally(() => lifetime.sending.delete(bucket));
    lifetime.sending.set(bucket, sent);
  }
  return sent;
}

export async function writeMarker(
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

export function markerWriter(
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
        // A bucket's lifetime rides in the same call the first time this process writes to it, unless
        // its metadata (read once per bucket per process) already carries it.
        const buckets = part.map(({ eventId }) => markerStream(eventId));
        const unknown = [...new Set(buckets.filter((bucket) => !lifetime.written.has(bucket)))];
        const carried = await Promise.all(unknown.map((bucket) => hasLifetime(client, lifetime, bucket)));
        const fresh = unknown.filter((_, k) => !carried[k]);
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
 * source message sent again is recognised. Run once per log, before ingesting into it with this
 * version; `log` is the KurrentDB event log on the same server as `client` (the caller closes both).
 */
export async function backfillKurrentDbIdMarkers(
  client: KurrentDBClient,
  log: Pick<EventLog, 'readAll'>,
  onProgress?: (progress: BackfillProgress) => void,
): Promise<BackfillProgress> {
  const lifetime = bucketLifetime(DEFAULT_DEDUPE_WINDOW_SECONDS);
  const server = {
    readMarkers: (id: string) => readMarkers(client, id),
    writeMarker: (id: string, m: IdMarker) => writeMarker(client, lifetime, id, m),
  };
  return backfillIdMarkers(server, log, { onProgress });
}
