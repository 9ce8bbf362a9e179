import type { RecordedEvent } from '../eventstore/port.ts';
import { dataOf } from '../events/catalogue.ts';
import { THESIS_JOB_EVENT_TYPES } from '../events/thesis.ts';
import type { ThesisSnapshot } from '../readmodels/schemas.ts';
import type { Entity, Projector } from './projector.ts';

export const THESIS_COLLECTION = 'thesis';

export const THESIS_JOB_PHASES = ['queued', 'running', 'saved', 'failed'] as const;
export type ThesisJobPhase = (typeof THESIS_JOB_PHASES)[number];

/** The latest job of a contract; earlier jobs only survive through `snapshot` and `lastOutcome`. */
export type ThesisJob = {
  requestId: string;
  phase: ThesisJobPhase;
  requestedAt: string;
  startedAt: string | null;
};

/**
 * What the thesis read model stores per contract. ThesisStatus is derived from it at read time
 * (service/thesis/status.ts), because `stale`, the 24-hour drop and `workerAvailable` depend on
 * the time of the read and on the reader, not on any event.
 */
export type ThesisRecord = {
  contract: string;
  job: ThesisJob | null;
  /** The latest saved snapshot, whatever happened after it. */
  snapshot: ThesisSnapshot | null;
  /** Outcome of the latest finished job (saved or failed), and when it finished. */
  lastOutcome: string | null;
  lastOutcomeAt: string | null;
  /** End of the cooldown after the latest failure. */
  cooldownUntil: string | null;
};

/** The stream revision the record reflects, so a reader can tell whether the projection is current. */
export type ThesisFoldState = { revision: number };

export function emptyThesisRecord(contract: string): ThesisRecord {
  return { contract, job: null, snapshot: null, lastOutcome: null, lastOutcomeAt: null, cooldownUntil: null };
}

/**
 * Pure fold of one `thesis-<contract>` event (only its type and data matter, so the feed can
 * apply the request it just appended). Events of another job than the latest are ignored.
 */
export function foldThesisRecord(
  current: ThesisRecord | null,
  event: Pick<RecordedEvent, 'type' | 'data'>,
): ThesisRecord | null {
  switch (event.type) {
    case 'thesis.requested': {
      const d = dataOf('thesis.requested', event.data);
      const base = current ?? emptyThesisRecord(d.contract);
      return {
        ...base,
        job: { requestId: d.requestId, phase: 'queued', requestedAt: d.at, startedAt: null },
        cooldownUntil: null,
      };
    }
    case 'thesis.started': {
      const d = dataOf('thesis.started', event.data);
      if (current?.job?.requestId !== d.requestId || current.job.phase !== 'queued') return current;
      return { ...current, job: { ...current.job, phase: 'running', startedAt: d.at } };
    }
    case 'thesis.saved': {
      const d = dataOf('thesis.saved', event.data);
      if (!current?.job || current.job.requestId !== d.requestId) return current;
      return {
        ...current,
        job: { ...current.job, phase: 'saved' },
        snapshot: d.snapshot,
        lastOutcome: d.outcome,
        lastOutcomeAt: d.at,
        cooldownUntil: null,
      };
    }
    case 'thesis.failed': {
      const d = dataOf('thesis.failed', event.data);
      if (!current?.job || current.job.requestId !== d.requestId) return current;
      return {
        ...current,
        job: { ...current.job, phase: 'failed' },
        lastOutcome: d.outcome,
        lastOutcomeAt: d.at,
        cooldownUntil: d.nextEligibleAt,
      };
    }
    default:
      return current;
  }
}

/** Folds a whole `thesis-<contract>` stream (the read path when the projection lags). */
export function foldThesisStream(events: readonly RecordedEvent[]): ThesisRecord | null {
  let record: ThesisRecord | null = null;
  for (const event of events) record = foldThesisRecord(record, event);
  return record;
}

export const thesisProjector: Projector<ThesisRecord, ThesisFoldState> = {
  collection: THESIS_COLLECTION,
  typePrefixes: THESIS_JOB_EVENT_TYPES,
  keyOf: (event) =>
    (THESIS_JOB_EVENT_TYPES as readonly string[]).includes(event.type)
      ? (event.data as { contract: string }).contract.toLowerCase()
      : null,
  fold(current, event) {
    const doc = foldThesisRecord(current?.doc ?? null, event);
    if (doc === null) return null;
    return {
      doc,
      state: { revision: event.revision },
      sortKey: doc.job?.requestedAt ?? '',
      facet: doc.job?.phase ?? 'none',
      keys: {},
    };
  },
};

export type ThesisEntity = Entity<ThesisRecord, ThesisFoldState>;
