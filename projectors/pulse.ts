import { isBeatId } from '../config/beats.ts';
import type { RecordedEvent } from '../eventstore/port.ts';
import { dataOf } from '../events/catalogue.ts';
import type { PulseCard } from '../readmodels/schemas.ts';
import type { Entity, Projector } from './projector.ts';

export const PULSE_COLLECTION = 'pulse';

/** One document per configured beat: its current card, served as published (quiet cards too). */
export function foldPulse(
  current: Entity<PulseCard, null> | null,
  event: RecordedEvent,
): Entity<PulseCard, null> | null {
  if (event.type !== 'pulse.published') return current;
  const { card } = dataOf('pulse.published', event.data);
  return { doc: card, state: null, sortKey: '', facet: 'card', keys: {} };
}

export const pulseProjector: Projector<PulseCard, null> = {
  collection: PULSE_COLLECTION,
  typePrefixes: ['pulse.published'],
  // Ingest refuses cards for unknown beats; a stray one in the log is skipped rather than stored.
  keyOf(event) {
    if (event.type !== 'pulse.published') return null;
    const beat = (event.data as { card?: { beat?: unknown } }).card?.beat;
    return typeof beat === 'string' && isBeatId(beat) ? beat : null;
  },
  fold: foldPulse,
};
