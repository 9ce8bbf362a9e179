import type { ListPage, StoredDoc } from '../stored-doc.ts';

/**
 * The history read model's port: every write of a versioned collection's public documents (the
 * board's projects) kept with its validity range in log positions, [validFrom, validTo), validTo
 * being the position of the document's next write (OPEN_END while it is the current one). It is
 * written by the read store's own commit, in the transaction that writes the live documents (see
 * `DocWrite.versions`), so a replay rebuilds it row for row and it is never behind the live model.
 *
 * "As of P" means: after every event up to log position P. Reads name P; the service finds P from a
 * time (the log's `positionBefore`) or a delta cursor, and names it by `pointAtSeq`. Every adapter
 * passes test/contract/history.contract.ts.
 */

/** The validTo of a current version: no later write yet. */
export const OPEN_END = Number.MAX_SAFE_INTEGER;

/** One write of a document as the runner folded it, handed to the store with the live document. */
export type VersionWrite = {
  /** Log position of the write (the version's validFrom). */
  seq: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  doc: unknown;
  /** A top-level member of `doc` that is large and rarely changed, which a store may keep once per change of it. */
  sharedMember?: string;
};

/** A write that names a point in the log: its position and when the archive recorded it. */
export type WritePoint = { seq: number; writtenAt: string };

/** A version as read: a stored document whose `seq` and `writtenAt` are the write's (state is null, keys empty). */
export type Version<D = unknown> = StoredDoc<D, null>;

/** A document written in (from, to]: its version valid at `to` and the one valid at `from` (null if none). */
export type VersionChange<D = unknown> = { after: Version<D>; before: Version<D> | null };

export type HistoryPageQuery = { facets?: readonly string[]; offset: number; limit: number };

/** Keyset walk of the board as of a point, newest first: rows strictly after `after` in (sortKey DESC, id DESC). */
export type HistoryScanQuery = { facets?: readonly string[]; after?: { sortKey: string; id: string }; limit: number };

/** Writes in (from, to] in delta order (seq, id), after `after`; documents whose version at `to` equals that at `from` are left out. */
export type HistoryChangesQuery = { from: number; to: number; after?: { seq: number; id: string }; limit: number };

export interface HistoryStore {
  /**
   * 0 when the model holds every write of the collection; otherwise the checkpoint the collection
   * already had when this store began recording history (a store written before the model existed:
   * `pulseboard replay` builds it whole).
   */
  recordedFrom(collection: string): Promise<number>;
  /** The last write at or before position `seq`; null before the first. */
  pointAtSeq(collection: string, seq: number): Promise<WritePoint | null>;
  /** Document `id` as of position `at`: the version valid then, or null. One index probe. */
  get<D = unknown>(collection: string, id: string, at: number): Promise<Version<D> | null>;
  getMany<D = unknown>(collection: string, ids: readonly string[], at: number): Promise<Map<string, Version<D>>>;
  /** The documents valid at `at`, in listing order (sortKey DESC, id DESC), a page of them and their total then. */
  list<D = unknown>(collection: string, at: number, query: HistoryPageQuery): Promise<ListPage<D>>;
  /** How many documents (in `facets`, or all) were valid at `at`: one probe per facet. */
  count(collection: string, at: number, facets?: readonly string[]): Promise<number>;
  /** `list` by keyset: what an export walks (no offset to count, nothing held). */
  scan<D = unknown>(collection: string, at: number, query: HistoryScanQuery): Promise<Version<D>[]>;
  /** Net changes between two points. */
  changes<D = unknown>(collection: string, query: HistoryChangesQuery): Promise<VersionChange<D>[]>;
}
