import type { HistoryStore, VersionWrite } from './history/port.ts';
import type { ListPage, StoredDoc } from './stored-doc.ts';

// Kept with their helpers, so the history port can use them without importing this one.
export type { ListPage, StoredDoc } from './stored-doc.ts';

/**
 * The read-store port: collections of response-shaped documents written by one ordered projector
 * each. Every adapter passes test/contract/readstore.contract.ts unchanged.
 */

/**
 * What a projector hands to `commit`: a stored document whose JSON text it may already have made, and
 * for a versioned collection every public write the batch made to it and did not stage (`stageVersions`),
 * oldest first (the history read model, readmodels/history/port.ts; a store with `history` records them
 * in the same transaction).
 */
export type DocWrite<D = unknown, S = unknown> = Omit<StoredDoc<D, S>, 'json' | 'utf8'> & {
  json?: string;
  versions?: readonly VersionWrite[];
};

/** A version that a later write of the same batch closed: valid in [version.seq, validTo). */
export type ClosedVersion = { id: string; version: VersionWrite; validTo: number };

/**
 * A commit applies only when the stored checkpoint is still the one the batch started from; otherwise
 * another writer advanced the collection and nothing of this batch is written.
 */
export type CommitOutcome = { ok: true } | { ok: false; reason: 'checkpoint_moved'; actual: number };

export type DeltaPosition = { seq: number; id: string };

export type DeltaQuery = {
  /** Start after this (seq, id), or at the first row written at or after `fromWrittenAt`. */
  start: { after: DeltaPosition } | { fromWrittenAt: string };
  /** Rows are served only up to this seq: the projector's committed checkpoint (high-water mark). */
  upToSeq: number;
  facets?: readonly string[];
  limit: number;
};

export type ListQuery = { facets?: readonly string[]; offset: number; limit: number };

/** Keyset listing, newest first: rows strictly after `before` in (sortKey DESC, id DESC) order. */
export type KeysetQuery = { facets?: readonly string[]; before?: { sortKey: string; id: string }; limit: number };

export interface ReadStore {
  /**
   * Last event position applied to a collection, 0 when none. An adapter may answer from a read made
   * earlier in the same event-loop turn (the SQLite one does); `fresh` asks for the store's value now
   * (a commit signalled by another thread or connection, a generation switch deciding on it).
   */
  checkpoint(collection: string, options?: { fresh?: boolean }): Promise<number>;
  /**
   * Writes documents and advances the checkpoint atomically (a crash replays the batch harmlessly).
   * With `expected`, the batch applies only if the stored checkpoint equals it at commit time
   * (compare-and-set: two writers on one collection never apply a fold twice nor move it back).
   */
  commit(
    collection: string,
    writes: readonly DocWrite[],
    checkpoint: number,
    expected?: number,
  ): Promise<CommitOutcome>;
  /**
   * Optional, a replay's build store only: takes versions that later writes of the batch being folded
   * closed, ahead of the batch's commit, so they are written while it folds. Each document's versions
   * come in log order, across these calls and then its commit; the batch's commits are asked for before
   * the next batch stages. A build has one writer: its commit refused after staging fails the build
   * (which is then removed, as any failed one).
   */
  stageVersions?(collection: string, versions: readonly ClosedVersion[]): void;
  get<D = unknown, S = unknown>(collection: string, id: string): Promise<StoredDoc<D, S> | null>;
  getMany<D = unknown, S = unknown>(collection: string, ids: readonly string[]): Promise<Map<string, StoredDoc<D, S>>>;
  /** Ids of documents having `value` under lookup key `key`, at most `limit`, in id order. */
  findIds(collection: string, key: string, value: string, limit: number): Promise<string[]>;
  /**
   * The documents `findIds` names, with their state, in one read: each one holds `value` under `key`
   * as it is read (two reads, ids then documents, could return a document a commit in between had
   * moved off the value).
   */
  findDocs<D = unknown, S = unknown>(
    collection: string,
    key: string,
    value: string,
    limit: number,
  ): Promise<StoredDoc<D, S>[]>;
  /** `findIds` for several values of one key in one read: value → ids (at most `limit` each, in id order); values without ids are absent. */
  findIdsMany(
    collection: string,
    key: string,
    values: readonly string[],
    limit: number,
  ): Promise<Map<string, string[]>>;
  /**
   * Lookup values of `key` that start with `prefix`, each with a document holding it, at most `limit`
   * pairs in (value, id) order: one range of the key's index (completion of a handle as it is typed).
   */
  findKeysByPrefix(
    collection: string,
    key: string,
    prefix: string,
    limit: number,
  ): Promise<{ value: string; id: string }[]>;
  /**
   * A page of the listing and its total, both from one snapshot: a commit from another connection
   * lands before the read or after it, never between the total and the rows. Costs the page at any
   * depth (it is walked from the nearer end).
   */
  list<D = unknown>(collection: string, query: ListQuery): Promise<ListPage<D>>;
  /** Exact, from counters maintained by `commit`: no scan of the collection. */
  count(collection: string, facets?: readonly string[]): Promise<number>;
  listKeyset<D = unknown>(collection: string, query: KeysetQuery): Promise<StoredDoc<D>[]>;
  delta<D = unknown>(collection: string, query: DeltaQuery): Promise<StoredDoc<D>[]>;
  /** The history read model kept beside the documents (absent from stores that keep none). */
  readonly history?: HistoryStore;
  /** Removes every document and checkpoint (tests and rebuilds). */
  clear(): Promise<void>;
  close(): Promise<void>;
}
