/**
 * KurrentDB's records as the port's (the positions are explained at the top of kurrentdb-event-log.ts):
 * log positions as safe numbers, data and metadata as plain JSON, and the $all filter for type prefixes.
 */
import {
  START,
  eventTypeFilter,
  excludeSystemEvents,
  type Filter,
  type JSONType,
  type Position,
  type ReadPosition,
  type RecordedEvent as KurrentRecordedEvent,
} from '@kurrent/kurrentdb-client';
import type { NewEvent, RecordedEvent } from '../port.ts';

export function toSafeNumber(value: bigint, what: string): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`KurrentDB ${what} ${value} is outside the range pulseboard positions can represent`);
  }
  return Number(value);
}

/** The port position of an event: its commit position, which equals its prepare position (see top). */
export function portPosition(position: Position | undefined, event: { streamId: string; revision: bigint }): number {
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

export function readPositionAfter(position: number): ReadPosition {
  return position <= 0 ? START : { commit: BigInt(position), prepare: BigInt(position) };
}

export function isSystem(event: { type: string; streamId: string }): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

export function dataOf(event: KurrentRecordedEvent): unknown {
  if (event.isJson) return event.data;
  // Not written by pulseboard (it only writes JSON); still read it if its bytes are JSON.
  const text = Buffer.from(event.data).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`KurrentDB event ${event.streamId}@${event.revision} holds binary data, not JSON`);
  }
}

export function metadataOf(event: KurrentRecordedEvent): Record<string, unknown> {
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
export function toRecorded(event: KurrentRecordedEvent, position: number): RecordedEvent {
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

export function jsonData(event: NewEvent): JSONType {
  const { data } = event;
  if (typeof data === 'string' || Array.isArray(data)) return data;
  if (typeof data === 'object' && data !== null) return data as Record<string, unknown>;
  throw new TypeError(
    `event ${event.id}: KurrentDB stores a JSON object, array or string as event data, not ${data === null ? 'null' : typeof data}`,
  );
}

/** The filter for a readAll; 'nothing' when the prefixes can only select system events. */
export function filterFor(prefixes: readonly string[] | undefined): Filter | 'nothing' {
  if (prefixes === undefined || prefixes.length === 0 || prefixes.includes('')) return excludeSystemEvents();
  const user = prefixes.filter((prefix) => !prefix.startsWith('$'));
  if (user.length === 0) return 'nothing';
  return eventTypeFilter({ prefixes: [...user] });
}
