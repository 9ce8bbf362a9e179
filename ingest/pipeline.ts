import type { EventLog, NewEvent } from '../eventstore/port.ts';
import { mapMessage, type IngestSource } from './map.ts';
import { parseRawMessage } from './messages.ts';

export type IngestOutcome =
  | { status: 'accepted' }
  | { status: 'duplicate' }
  | { status: 'rejected'; path: string; reason: string };

export type Ingestor = { ingest(raw: string, source: 'ndjson' | 'kafka'): Promise<IngestOutcome> };

/**
 * One JSON text in, its events appended (or a rejection naming the field), nothing half-done:
 * validation and mapping happen before the first append. Store failures are thrown, not
 * reported as rejections, so a source never dead-letters a good message because the log was down.
 */
export function createIngestor(log: EventLog, options: { followerProvider: string }): Ingestor {
  const rules = { followerProvider: options.followerProvider };

  return {
    async ingest(raw: string, source: IngestSource): Promise<IngestOutcome> {
      const parsed = parseRawMessage(raw, rules);
      if (!parsed.ok) return { status: 'rejected', path: parsed.path, reason: parsed.reason };

      const byStream = new Map<string, NewEvent[]>();
      for (const { stream, event } of mapMessage(parsed.message, source)) {
        const events = byStream.get(stream);
        if (events) events.push(event);
        else byStream.set(stream, [event]);
      }

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
