/**
 * Idempotent appends on KurrentDB in a bounded number of round trips, whatever the stream's length.
 *
 * Why the adapter checks ids itself. The server checks event ids only in two cases: with an expected
 * revision below the current one (it compares the events right after that revision) and, best
 * effort, against a bounded cache of recent ids when the expectation is `any`. With the expectation
 * equal to the current revision it checks nothing. So a retried message whose stream moved on since
 * it was first stored (calls-collector, pulse-<beat> grow forever) would be stored twice.
 *
 * How, without reading the stream. Every event is preceded by an id marker: a small event in the
 * id's marker bucket stream (`pulseboard-ids-<bucket>`, below) naming the id, the stream and the exact
 * revision the event is about to take (an append with the expected revision r puts its events at
 * r+1, r+2, … or fails). An append:
 *   1. reads the stream's current revision r;
 *   2. then reads the markers of its ids (one short stream per id, read in parallel) and checks each
 *      marker at or below r by reading that one revision: the id there means the event is stored;
 *   3. writes a marker for each new id (all of them in one multi-stream append where the server has
 *      it, KurrentDB 25.1+), then appends the new events expecting r.
 * A conflict (another writer moved the stream) starts again from 1. Correctness: a stored event's
 * marker was durable before the event, so an append that reads r after the event was stored reads
 * the marker in step 2; one that read r before it expects a revision the stream has left, and fails.
 * A marker whose append failed, or whose process died before appending, names a revision that holds
 * another id (or nothing) and is ignored. Markers are only ever added, never replaced.
 *
 * Cost per append of n new events: five round trips (revision, markers, marker writes, append,
 * positions): n parallel small marker reads, and the n marker writes in one call (n parallel writes
 * on a server without multi-stream appends); a retry of stored ids costs three.
 */
import { createHash } from 'node:crypto';
import type { AppendResult, AppendedEvent, EventLog, ExpectedRevision, NewEvent } from '../port.ts';

/** The event type of id markers; `$`-prefixed, so every $all read and subscription filters them out. */
export const ID_MARKER_TYPE = '$pulseboard-id';

/**
 * Marker streams: 2^18 buckets, an id's by a hash of it. Each bucket stream carries `$maxAge` (the
 * dedupe window) in its metadata, so the server drops a marker from reads once it is older than the
 * window and a scavenge removes it from the log: markers no longer double the log for ever, they add
 * only the last window's ids (and one metadata record per bucket). A bucket holds the window's
 * markers of about 1/262,144 of all ids: a few at most at a million events a day. The bound holds only
 * if scavenges run: docs/scale.md says what the operator schedules. A process reads a bucket's metadata
 * once before its first marker there and writes the lifetime only where it is missing (id-markers.ts).
 */
export const MARKER_BUCKETS = 2 ** 18;
/** How long an id is recognised after it was stored: 7 days (docs/decisions.md). */
export const DEFAULT_DEDUPE_WINDOW_SECONDS = 7 * 24 * 3600;

export function markerBucket(eventId: string): number {
  return createHash('sha256').update(eventId.toLowerCase()).digest().readUInt32BE(0) % MARKER_BUCKETS;
}

export function markerStream(eventId: string): string {
  return `pulseboard-ids-${markerBucket(eventId).toString(16).padStart(5, '0')}`;
}

export type IdMarker = { stream: string; revision: number };
export type StoredRef = { id: string; position: number; revision: number };

/** What the protocol needs from the server; each call is one round trip. */
export type IdempotencyServer = {
  /** The stream's last revision, null when it does not exist. */
  lastRevision(stream: string): Promise<number | null>;
  /** Every marker written for this event id within the dedupe window (a few at most: one per attempt to store it). */
  readMarkers(eventId: string): Promise<IdMarker[]>;
  /** The event at exactly this revision, or null. */
  readAt(stream: string, revision: number): Promise<StoredRef | null>;
  /** The events from `fromRevision`, at most `count`. */
  readRange(stream: string, fromRevision: number, count: number): Promise<StoredRef[]>;
  /** Appends one marker to the event id's marker stream (any expected revision). */
  writeMarker(eventId: string, marker: IdMarker): Promise<void>;
  /** writeMarker for each entry; durable, every one, when it resolves (one call where the server allows). */
  writeMarkers(markers: readonly { eventId: string; marker: IdMarker }[]): Promise<void>;
  /** Appends the events expecting `expected` (null: no stream); 'conflict' when the stream is elsewhere. */
  appendExpecting(stream: string, events: readonly NewEvent[], expected: number | null): Promise<'ok' | 'conflict'>;
};

/** An `any` append whose stream keeps moving retries; exact expectations settle within two rounds. */
export const MAX_APPEND_ATTEMPTS = 50;

function revisionMatches(expected: ExpectedRevision, actual: number | null): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === null;
  if (expected === 'stream_exists') return actual !== null;
  return actual === expected;
}

/** The stored copy of each id among `ids`, found through its markers (ids never stored are absent). */
async function findStored(
  server: IdempotencyServer,
  stream: string,
  ids: readonly string[],
  revision: number | null,
): Promise<Map<string, StoredRef>> {
  const found = new Map<string, StoredRef>();
  if (revision === null) return found;
  await Promise.all(
    ids.map(async (id) => {
      const markers = await server.readMarkers(id);
      const candidates = [
        ...new Set(markers.filter((m) => m.stream === stream && m.revision <= revision).map((m) => m.revision)),
      ];
      for (const candidate of candidates) {
        const stored = await server.readAt(stream, candidate);
        if (stored && stored.id.toLowerCase() === id) {
          found.set(id, stored);
          return;
        }
      }
    }),
  );
  return found;
}

/** EventLog.append on top of `server`, with the port's idempotency (see the top of this file). */
export async function appendIdempotent(
  server: IdempotencyServer,
  stream: string,
  events: readonly NewEvent[],
  expected: ExpectedRevision = 'any',
): Promise<AppendResult> {
  const keys = events.map((event) => event.id.toLowerCase());
  const distinct = [...new Set(keys)];
  for (let attempt = 1; ; attempt += 1) {
    const revision = await server.lastRevision(stream);
    const stored = await findStored(server, stream, distinct, revision);

    const results: (AppendedEvent | undefined)[] = [];
    const fresh: { index: number; event: NewEvent }[] = [];
    const firstIndex = new Map<string, number>();
    events.forEach((event, i) => {
      const key = keys[i]!;
      const ref = stored.get(key);
      if (ref) results[i] = { id: event.id, position: ref.position, revision: ref.revision, duplicate: true };
      else if (!firstIndex.has(key)) {
        firstIndex.set(key, i);
        fresh.push({ index: i, event });
      }
    });
    const finish = (): AppendedEvent[] =>
      events.map((event, i) => results[i] ?? { ...results[firstIndex.get(keys[i]!)!]!, id: event.id, duplicate: true });

    // A retry of an append that already landed is idempotent whatever revision it expected.
    if (fresh.length === 0) return { ok: true, events: finish(), revision: revision ?? -1 };
    if (!revisionMatches(expected, revision))
      return { ok: false, reason: 'wrong_expected_revision', actualRevision: revision };

    const firstRevision = (revision ?? -1) + 1;
    await server.writeMarkers(
      fresh.map(({ event }, k) => ({
        eventId: event.id.toLowerCase(),
        marker: { stream, revision: firstRevision + k },
      })),
    );
    const outcome = await server.appendExpecting(
      stream,
      fresh.map(({ event }) => event),
      revision,
    );
    if (outcome === 'conflict') {
      // Another writer moved the stream since it was read: decide again from what is stored now.
      if (attempt < MAX_APPEND_ATTEMPTS) continue;
      throw new Error(`append to ${stream}: the stream kept changing during ${MAX_APPEND_ATTEMPTS} attempts`);
    }

    const written = await server.readRange(stream, firstRevision, fresh.length);
    if (written.length !== fresh.length) {
      throw new Error(
        `append to ${stream}: expected ${fresh.length} events from revision ${firstRevision}, read ${written.length}`,
      );
    }
    fresh.forEach(({ index, event }, k) => {
      const ref = written[k]!;
      if (ref.id.toLowerCase() !== event.id.toLowerCase()) {
        throw new Error(`append to ${stream}: revision ${firstRevision + k} holds ${ref.id}, not ${event.id}`);
      }
      results[index] = { id: event.id, position: ref.position, revision: firstRevision + k, duplicate: false };
    });
    return { ok: true, events: finish(), revision: firstRevision + fresh.length - 1 };
  }
}

export type BackfillProgress = { scanned: number; written: number; position: number };

/**
 * Writes the id markers a log stored before markers existed lacks: for every user event (in `$all`
 * order, through the port's readAll, which never returns markers), a marker naming its stream and
 * revision unless one already does. Safe to run again, and while the log takes appends (an append
 * writes its own markers). Costs one marker read per event and one write per missing marker.
 */
export async function backfillIdMarkers(
  server: Pick<IdempotencyServer, 'readMarkers' | 'writeMarker'>,
  log: Pick<EventLog, 'readAll'>,
  options: { pageSize?: number; onProgress?: (progress: BackfillProgress) => void } = {},
): Promise<BackfillProgress> {
  const pageSize = options.pageSize ?? 200;
  const progress: BackfillProgress = { scanned: 0, written: 0, position: 0 };
  for (;;) {
    const page = await log.readAll({ afterPosition: progress.position, limit: pageSize });
    if (page.length === 0) return progress;
    const written = await Promise.all(
      page.map(async (event) => {
        const id = event.id.toLowerCase();
        const markers = await server.readMarkers(id);
        if (markers.some((m) => m.stream === event.stream && m.revision === event.revision)) return 0;
        await server.writeMarker(id, { stream: event.stream, revision: event.revision });
        return 1;
      }),
    );
    progress.scanned += page.length;
    progress.written += written.reduce<number>((sum, n) => sum + n, 0);
    progress.position = page[page.length - 1]!.position;
    options.onProgress?.({ ...progress });
  }
}
