import type { RecordedEvent } from '../eventstore/port.ts';

/** What a projector keeps for one document: the public doc plus its private fold state. */
export type Entity<D, S> = {
  doc: D;
  state: S;
  sortKey: string;
  facet: string;
  keys: Record<string, string[]>;
};

/**
 * A projector is a pure fold: given the current entity (null before the first event)
 * and one event, it returns the next entity. The runner decides from the returned doc whether
 * this was a write (doc changed: new seq and writtenAt) or only a state change.
 */
export type Projector<D = unknown, S = unknown> = {
  /** The read-store collection it owns. */
  collection: string;
  /** Event type prefixes it reads (e.g. 'project.', 'dossier.'). */
  typePrefixes: readonly string[];
  /** The id of the document an event folds into; null to skip the event. */
  keyOf(event: RecordedEvent): string | null;
  /** Returns null when the event leaves nothing to store (e.g. a revoke of a key never issued). */
  fold(current: Entity<D, S> | null, event: RecordedEvent): Entity<D, S> | null;
  /**
   * Whether a write of a document in this facet is kept in the history read model
   * (readmodels/history/port.ts); absent: the collection keeps no history.
   */
  versioned?(facet: string): boolean;
  /** A top-level member of its versions that is large and rarely changed (VersionWrite.sharedMember). */
  sharedMember?: string;
};

/** Erases the document types so projectors of different models can sit in one list. */
export function anyProjector<D, S>(projector: Projector<D, S>): Projector {
  return projector as unknown as Projector;
}
