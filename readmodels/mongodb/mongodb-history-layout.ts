/**
 * The MongoDB history's layout (mongodb-history.ts says what each collection holds): names, document
 * shapes, indexes and keys, shared by its reads and its write (mongodb-history-write.ts).
 */
import type { Binary, ClientSession, Collection } from 'mongodb';

export const HISTORY_VERSIONS = '_pulseboard_history_versions';
export const HISTORY_PLACEMENTS = '_pulseboard_history_placements';
export const HISTORY_COUNTS = '_pulseboard_history_counts';
export const HISTORY_FROM = '_pulseboard_history_from';
export const HISTORY_SHARED = '_pulseboard_history_shared';

export type VersionDoc = {
  _id: string;
  c: string;
  id: string;
  from: number;
  to: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  /** `from` of the placement this version belongs to (what closes it when the document moves). */
  placed: number;
  /** UTF-8 of the JSON text, as the live documents keep it (without the shared member when `shared` is set). */
  doc: Binary;
  /** The `_id` of the shared member's text and the byte of `doc` where it goes back. */
  shared?: string;
  at?: number;
};
export type SharedDoc = { _id: string; text: Binary };
export type PlacementDoc = {
  _id: string;
  c: string;
  id: string;
  sortKey: string;
  facet: string;
  from: number;
  to: number;
};
export type CountDoc = { _id: string; c: string; at: number; counts: { facet: string; n: number }[] };
export type FromDoc = { _id: string; position: number };

/** The history collections' indexes, by collection; every read names one of these (or `_id_`) in its hint. */
export const HISTORY_INDEXES = {
  [HISTORY_VERSIONS]: [
    // A document's versions by end: its open one (a commit), the one valid at P among a page's (to > P, from ≤ P).
    { key: { c: 1, id: 1, to: 1, from: 1 }, name: 'history_open' },
    // Writes in (from, to] in delta order, and the last write at or before a position.
    { key: { c: 1, from: 1, id: 1, to: 1 }, name: 'history_delta' },
  ],
  [HISTORY_PLACEMENTS]: [
    { key: { c: 1, sortKey: -1, id: -1, from: 1, to: 1 }, name: 'placement_listing' },
    { key: { c: 1, facet: 1, sortKey: -1, id: -1, from: 1, to: 1 }, name: 'placement_facet' },
  ],
  [HISTORY_COUNTS]: [{ key: { c: 1, at: 1 }, name: 'count_at' }],
} as const;

/** An index of the versions no read uses any more (a point at a time comes from the log): dropped where it exists. */
export const STALE_VERSIONS_INDEX = 'history_time';
const INDEX_NOT_FOUND = 27;
const NAMESPACE_NOT_FOUND = 26;

export async function dropStaleIndex(collection: Collection<VersionDoc>, name: string): Promise<void> {
  try {
    await collection.dropIndex(name);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== INDEX_NOT_FOUND && code !== NAMESPACE_NOT_FOUND) throw error;
  }
}

/** Ids per query of a page's versions (a batch of an export holds thousands). */
export const IDS_PER_READ = 1000;
const KEY_DIGITS = 16;

/** A version's `_id`: [collection, id] as JSON (no other pair's text starts with it), then `from` in fixed width. */
export function versionKey(collection: string, id: string, from: number): string {
  return `${JSON.stringify([collection, id])}${String(from).padStart(KEY_DIGITS, '0')}`;
}
export const placementKey = (collection: string, id: string, from: number) => JSON.stringify([collection, id, from]);
export const countKey = (collection: string, at: number) => JSON.stringify([collection, at]);

export const bytesOf = (binary: Binary): Uint8Array => binary.read(0, binary.position);
export const utf8 = new TextDecoder();

/** The shared texts `rows` name, by `_id`: one read per IDS_PER_READ of them. */
export async function textsOf(
  sharedTexts: Collection<SharedDoc>,
  rows: readonly VersionDoc[],
  session?: ClientSession,
): Promise<Map<string, Uint8Array>> {
  const texts = new Map<string, Uint8Array>();
  const wanted = [...new Set(rows.flatMap((row) => (row.shared === undefined ? [] : [row.shared])))];
  for (let i = 0; i < wanted.length; i += IDS_PER_READ) {
    const found = await sharedTexts
      .find({ _id: { $in: wanted.slice(i, i + IDS_PER_READ) } }, { hint: '_id_', ...(session ? { session } : {}) })
      .toArray();
    for (const row of found) texts.set(row._id, bytesOf(row.text));
  }
  return texts;
}
