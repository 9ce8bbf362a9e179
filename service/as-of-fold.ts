/**
 * A project's past, folded from its own stream (`project-<id>`) by the projectors' own fold code
 * (`foldEvents`), never by a second implementation. Used by as-of reads and the history.
 */
import type { EventLog, RecordedEvent } from '../eventstore/port.ts';
import { streams } from '../events/streams.ts';
import type { Projector } from '../projectors/projector.ts';
import { foldEvents } from '../projectors/runner.ts';
import type { StoredDoc } from '../readmodels/port.ts';

/** Every event of the project's stream, in log order. Folds pick the types they read. */
export function readProjectStream(log: EventLog, projectId: string): Promise<RecordedEvent[]> {
  return log.readStream(streams.project(projectId));
}

/** The events a projector would fold into document `id`, as its runner selects them. */
export function eventsFor(projector: Projector, id: string, events: readonly RecordedEvent[]): RecordedEvent[] {
  return events.filter(
    (e) => projector.typePrefixes.some((prefix) => e.type.startsWith(prefix)) && projector.keyOf(e) === id,
  );
}

/**
 * Document `id` as the projector had it once the archive had recorded everything up to `asOfMs`
 * (recordedAt, compared as instants); null when nothing was folded by then.
 */
export function foldAsOf<D, S>(
  projector: Projector<D, S>,
  id: string,
  events: readonly RecordedEvent[],
  asOfMs: number,
): StoredDoc<D, S> | null {
  const upTo = eventsFor(projector as Projector, id, events).filter((e) => Date.parse(e.recordedAt) <= asOfMs);
  return foldEvents(projector, new Map(), upTo).get(id) ?? null;
}
