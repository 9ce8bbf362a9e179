import type { EventLog, RecordedEvent } from '../eventstore/port.ts';

/**
 * `pulseboard export`: the events of a time range as NDJSON, for offline analysis.
 *
 * Privacy (thesis text never in public exports): without `includePrivate`,
 * whole event types that are private are left out, and private fields of other events are
 * replaced by WITHHELD. What is private is decided here, in these two tables, and nowhere else.
 */

export const WITHHELD = '[withheld]';

/** Left out whole: the private thesis feed, and access administration (key hashes, owners). */
export const PRIVATE_TYPE_PREFIXES = ['thesis.', 'key.', 'owner.'] as const;

/**
 * Fields withheld by event type: thesis text; voter names and avatars (the API shows them only to
 * allowlisted owners); research questions, answers and the owners who asked (allowlisted reads).
 */
export const PRIVATE_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'call.recorded': ['thesisText'],
  'vote.cast': ['name', 'avatar'],
  'ask.asked': ['question', 'owner'],
  'ask.updated': ['answer'],
  'research.requested': ['owner'],
};

/** A field with this name is withheld from any event type, so a new call event cannot leak it. */
const ALWAYS_PRIVATE_FIELDS = ['thesisText'];

export type ExportRange = {
  /** Inclusive, ISO 8601. */
  from: string;
  /** Exclusive, ISO 8601. */
  to: string;
  /** Only events whose type starts with one of these. */
  typePrefixes?: readonly string[];
  includePrivate: boolean;
  batchSize?: number;
};

export type ExportProgress = { written: number; scanned: number; position: number; head: number; elapsedMs: number };

export type ExportSummary = {
  written: number;
  /** Events left out as private, by type prefix. */
  leftOut: Record<string, number>;
  /** Values withheld, by `type field`. */
  withheld: Record<string, number>;
  /** The log head when the export started; later appends are not part of it. */
  head: number;
};

/** The private type prefix an event falls under, or null (exports leave such events out). */
export function privatePrefix(type: string): string | null {
  return PRIVATE_TYPE_PREFIXES.find((prefix) => type.startsWith(prefix)) ?? null;
}

/** The event as exported: private fields replaced (only values that are present and not null). */
export function redact(event: RecordedEvent, withheld: Record<string, number>): RecordedEvent {
  if (event.data === null || typeof event.data !== 'object' || Array.isArray(event.data)) return event;
  const fields = new Set([...(PRIVATE_FIELDS[event.type] ?? []), ...ALWAYS_PRIVATE_FIELDS]);
  const data = event.data as Record<string, unknown>;
  let copy: Record<string, unknown> | null = null;
  for (const field of fields) {
    if (data[field] === undefined || data[field] === null) continue;
    copy ??= { ...data };
    copy[field] = WITHHELD;
    const key = `${event.type} ${field}`;
    withheld[key] = (withheld[key] ?? 0) + 1;
  }
  return copy ? { ...event, data: copy } : event;
}

/**
 * Streams the range in batches (constant memory), calling `write` with one NDJSON line per event
 * and awaiting it, so a slow reader slows the export down instead of filling memory.
 */
export async function exportEvents(
  log: EventLog,
  range: ExportRange,
  sink: { write(line: string): Promise<void>; onProgress?(progress: ExportProgress): void; clock?: () => number },
): Promise<ExportSummary> {
  const fromMs = Date.parse(range.from);
  const toMs = Date.parse(range.to);
  const clock = sink.clock ?? (() => performance.now());
  const started = clock();
  const batchSize = range.batchSize ?? 1000;
  const head = await log.headPosition();
  const summary: ExportSummary = { written: 0, leftOut: {}, withheld: {}, head };
  // The log seeks by time itself (EventLog.positionBefore): positions are opaque to the service, and on
  // KurrentDB they are byte offsets a read may not start in the middle of.
  let after = Math.min(await log.positionBefore(range.from), head);
  let scanned = 0;
  for (;;) {
    const batch = await log.readAll({
      afterPosition: after,
      toPosition: head,
      limit: batchSize,
      ...(range.typePrefixes && range.typePrefixes.length > 0 ? { typePrefixes: range.typePrefixes } : {}),
    });
    if (batch.length === 0) break;
    let ended = false;
    for (const event of batch) {
      const at = Date.parse(event.recordedAt);
      if (at >= toMs) {
        ended = true;
        break;
      }
      if (at < fromMs) continue;
      scanned += 1;
      const prefix = range.includePrivate ? null : privatePrefix(event.type);
      if (prefix !== null) {
        summary.leftOut[prefix] = (summary.leftOut[prefix] ?? 0) + 1;
        continue;
      }
      const exported = range.includePrivate ? event : redact(event, summary.withheld);
      await sink.write(`${JSON.stringify(exported)}\n`);
      summary.written += 1;
    }
    after = batch[batch.length - 1]!.position;
    sink.onProgress?.({ written: summary.written, scanned, position: after, head, elapsedMs: clock() - started });
    if (ended || batch.length < batchSize) break;
  }
  return summary;
}
