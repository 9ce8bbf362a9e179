import { Binary, type Collection, type Filter } from 'mongodb';
import type { DocWrite, StoredDoc } from '../port.ts';
import { storedFromTexts } from '../stored-doc.ts';

/**
 * The MongoDB read store's layout. One MongoDB collection per read-model collection and generation, in the database the URL
 * names (e.g. mongodb://host/pulseboard?replicaSet=rs0): generation 0 uses the read model's own name,
 * generation N ≥ 1 (built by `pulseboard replay`, readmodels/mongodb/mongodb-generations.ts) the name
 * with `_v<N>` appended. A document carries the StoredDoc fields with
 * `_id` = id; `doc`, `state` and `keys` are kept as JSON text so what a projector wrote comes back
 * byte-identical (key order, `$`/`.` in keys, lone surrogates — none of which BSON round-trips
 * reliably), `doc` as that text's UTF-8 bytes (BSON binary: the driver hands them over as a view of
 * the reply, so a response is written from them without decoding and encoding the text; a `doc`
 * written as a BSON string by an earlier version reads too), and `lookup` holds the [key, value] pairs of `keys` for the findIds
 * index. Checkpoints live in `_pulseboard_checkpoints` (`_pulseboard_checkpoints_v<N>`) as {_id: collection, position};
 * documents per (collection, facet) in `_pulseboard_counts` (`…_v<N>`), updated by each commit in its
 * transaction from the facets the batch changed, so a board total is never a countDocuments; and the
 * listing's chunks in `_pulseboard_chunks` (`…_v<N>`, mongodb-list-chunks.ts), so a board page by
 * number starts at a chunk's edge instead of a skip from the end of the listing. The history read model
 * (every public write with its validity range) is kept in `_pulseboard_history_*` (`…_v<N>`, mongodb-history.ts).
 */
export type MongoDoc = {
  _id: string;
  /** UTF-8 of the JSON text (a string in documents written before it was kept as bytes). */
  doc: Binary | string;
  state: string;
  seq: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  keys: string;
  lookup: string[];
};

export type CheckpointDoc = { _id: string; position: number };
export type CounterDoc = { _id: string; collection: string; facet: string; n: number };

export const CHECKPOINTS = '_pulseboard_checkpoints';
export const COUNTS = '_pulseboard_counts';
/** Listing chunks (mongodb-list-chunks.ts): where a board page by number starts, without a skip to it. */
export const CHUNKS = '_pulseboard_chunks';
/** The pointer, the replay lock and who uses which generation (mongodb-generations.ts); no generation's data. */
export const GENERATIONS_COLLECTION = '_pulseboard_generations';
export const COLLECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,109}$/;
export const GENERATION_SUFFIX = /_v([1-9]\d{0,8})$/;

/** The MongoDB collection that holds read-model collection `name` in `generation`. */
export function generationCollection(name: string, generation: number): string {
  return generation === 0 ? name : `${name}_v${generation}`;
}

/** The generation a MongoDB collection of this database belongs to; null for one that holds no read-model data. */
export function generationOfCollection(name: string): number | null {
  if (name.startsWith('system.') || name === GENERATIONS_COLLECTION) return null;
  const match = GENERATION_SUFFIX.exec(name);
  return match ? Number(match[1]) : 0;
}

/**
 * The indexes of a read-model collection. Every query that sorts names the one matching its shape in
 * a hint (equality on facet first, then the sort), so a plan the server cached for other bounds (a
 * keyset `$or`, a short page) can never turn a deep page into a scan of the collection.
 */
export const INDEXES = [
  { key: { sortKey: -1, _id: -1 }, name: 'listing' },
  { key: { facet: 1, sortKey: -1, _id: -1 }, name: 'listing_facet' },
  { key: { seq: 1, _id: 1 }, name: 'delta' },
  { key: { facet: 1, seq: 1, _id: 1 }, name: 'delta_facet' },
  { key: { writtenAt: 1, seq: 1 }, name: 'written_seq' },
  { key: { lookup: 1, _id: 1 }, name: 'lookup' },
] as const;

export function lookupEntry(key: string, value: string): string {
  return JSON.stringify([key, value]);
}

function jsonText(value: unknown, what: string, id: string): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`document ${id}: ${what} is not JSON`);
  return text;
}

export function toMongo(write: DocWrite): MongoDoc {
  return {
    _id: write.id,
    doc: new Binary(Buffer.from(write.json ?? jsonText(write.doc, 'doc', write.id), 'utf8')),
    state: jsonText(write.state, 'state', write.id),
    seq: write.seq,
    writtenAt: write.writtenAt,
    sortKey: write.sortKey,
    facet: write.facet,
    keys: jsonText(write.keys, 'keys', write.id),
    lookup: [
      ...new Set(Object.entries(write.keys).flatMap(([key, values]) => values.map((value) => lookupEntry(key, value)))),
    ],
  };
}

/** The listing index matching a facet filter (none: every facet). */
export function listingHint(facets: readonly string[] | undefined): 'listing' | 'listing_facet' {
  return facets === undefined ? 'listing' : 'listing_facet';
}
/** The delta index matching a facet filter: `delta_facet` leads with the facet, so a filtered delta reads only its rows. */
export function deltaHint(facets: readonly string[] | undefined): 'delta' | 'delta_facet' {
  return facets === undefined ? 'delta' : 'delta_facet';
}

/** What listings fetch: never the projector-private state, nor the lookup array. */
export const LISTED = { projection: { state: 0, lookup: 0 } } as const;

/** A fetched row as the port's stored document (parsed on first access; listing rows carry no state). */
export function fromMongo<D, S>(row: Omit<MongoDoc, 'state' | 'lookup'> & { state?: string }): StoredDoc<D, S> {
  return storedFromTexts<D, S>({
    id: row._id,
    doc: typeof row.doc === 'string' ? row.doc : row.doc.read(0, row.doc.position),
    state: row.state,
    seq: row.seq,
    writtenAt: row.writtenAt,
    sortKey: row.sortKey,
    facet: row.facet,
    keys: row.keys,
  });
}

export const counterId = (collection: string, facet: string) => JSON.stringify([collection, facet]);

/** The listing's rows as the chunks read them (sort key, id and facet). */
export const listedRows = (target: Collection<MongoDoc>) =>
  target as unknown as Collection<{ _id: string; sortKey: string; facet: string }>;

/** No facets given: every document; an empty list: none (as in the SQLite store). */
export function facetFilter(facets: readonly string[] | undefined): Filter<MongoDoc> {
  return facets === undefined ? {} : { facet: { $in: [...facets] } };
}
