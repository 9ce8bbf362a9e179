import type { EventLog, NewEvent, StreamAppend } from '../eventstore/port.ts';
import { mapMessage, type IngestSource } from './map.ts';
import { parseRawMessage } from './messages.ts';

export type IngestOutcome =
  { status: 'accepted' } | { status: 'duplicate' } | { status: 'rejected'; path: string; reason: string };

export type Ingestor = { ingest(raw: string, source: IngestSource): Promise<IngestOutcome> };

export type BatchIngestor = Ingestor & {
  /**
   * Many JSON texts in, one outcome each (in order), the accepted ones appended with one batch
   * append: each message's events all or nothing, and on the embedded log the whole batch too.
   */
  ingestBatch(raws: readonly string[], source: IngestSource): Promise<IngestOutcome[]>;
};

/**
 * One JSON text in, its events appended (or a rejection naming the field), nothing half-done:
 * validation and mapping happen before the first append. Store failures are thrown, not
 * reported as rejections, so a source never dead-letters a good message because the log was down.
 */
export function createIngestor(log: EventLog, options: { followerProvider: string }): BatchIngestor {
  const rules = { followerProvider: options.followerProvider };

  /** A message's events grouped by stream (today one stream per message), or the rejection. */
  function prepare(
    raw: string,
    source: IngestSource,
  ): { ok: true; groups: StreamAppend[] } | { ok: false; outcome: IngestOutcome } {
    const parsed = parseRawMessage(raw, rules);
    if (!parsed.ok) return { ok: false, outcome: { status: 'rejected', path: parsed.path, reason: parsed.reason } };
    const byStream = new Map<string, NewEvent[]>();
    for (const { stream, event } of mapMessage(parsed.message, source)) {
      const events = byStream.get(stream);
      if (events) events.push(event);
      else byStream.set(stream, [event]);
    }
    return { ok: true, groups: [...byStream].map(([stream, events]) => ({ stream, events })) };
  }

  return {
    async ingestBatch(raws: readonly string[], source: IngestSource): Promise<IngestOutcome[]> {
      const outcomes: IngestOutcome[] = [];
      const groups: StreamAppend[] = [];
      // Which of `groups` each message owns (null for a rejected one).
      const spans: ({ start: number; end: number } | null)[] = [];
      for (const raw of raws) {
        const prepared = prepare(raw, source);
        if (!prepared.ok) {
          outcomes.push(prepared.outcome);
          spans.push(null);
          continue;
        }
        outcomes.push({ status: 'duplicate' });
        spans.push({ start: groups.length, end: groups.length + prepared.groups.length });
        groups.push(...prepared.groups);
      }
      const results = groups.length > 0 ? await log.appendBatch(groups) : [];
      spans.forEach((span, m) => {
        if (!span) return;
        for (let g = span.start; g < span.end; g++) {
          if (results[g]!.some((e) => !e.duplicate)) {
            outcomes[m] = { status: 'accepted' };
            return;
          }
        }
      });
      return outcomes;
    },

    async ingest(raw: string, source: IngestSource): Promise<IngestOutcome> {
      const prepared = prepare(raw, source);
      if (!prepared.ok) return prepared.outcome;
      const byStream = new Map(prepared.groups.map((g) => [g.stream, g.events]));

      let stored = 0;
      for (const [stream, events] of byStream) {
        const result = await log.append(stream, events, 'any');
        if (!result.ok) {
          // Impossible with 'any'; an adapter that reports it anyway is broken, not the message.
          throw new Error(`event log refused an 'any' append to ${stream}: ${result.reason}`);
        }
        stored += result.events.filter((e) => !e.duplicate).length;
      }
      return stored > 0 ? { status: 'accepted' } : { status: 'duplicate' };
    },
  };
}
