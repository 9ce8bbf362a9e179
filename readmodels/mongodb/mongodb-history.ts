/**
 * The MongoDB store's history read model (readmodels/history/port.ts), written by the read store's
 * commit inside its transaction (`DocWrite.versions`), in collections of the store's generation (so a
 * replay builds them with the rest, and drops them with the old generation):
 * - `_pulseboard_history_versions`: one document per public write, [from, to) in log positions; its
 *   `_id` is the JSON of [collection, id] followed by `from` in 16 digits, so the version valid at P
 *   is the last `_id` at or before [collection, id]P: one probe of the `_id` index;
 * - `_pulseboard_history_placements`: where a document stood in the listing, one per stretch of
 *   positions with the same (sort key, facet), so a board as of P walks about one key per project,
 *   not one per write;
 * - `_pulseboard_history_counts`: every facet's number of documents after each write that changed one,
 *   so the totals as of P are one probe;
 * - `_pulseboard_history_from`: the position from which the model records each collection (a store
 *   written before it existed: the checkpoint it had then; `pulseboard replay` builds it whole);
 * - `_pulseboard_history_shared`: a version's shared member (a project's dossier) once per change of it
 *   (history/shared-member.ts): such a version holds its text without the member, `shared` naming the
 *   member's text and `at` the byte where it goes back. Versions written before it are whole.
 *
 * Every read names its index in a hint and is a range bounded on both sides (equality, then a range
 * with both ends), or a walk along the index bounded by its limit; fields tested beyond the bounds are
 * in the index, so a row is fetched only once it matches.
 */
import type { ClientSession, Collection, Db, Filter, MongoClient } from 'mongodb';
import {
  OPEN_END,
  type HistoryChangesQuery,
  type HistoryPageQuery,
  type HistoryScanQuery,
  type HistoryStore,
  type Version,
  type VersionChange,
  type WritePoint,
} from '../history/port.ts';
import type { ListPage } from '../port.ts';
import { joinVersion } from '../history/shared-member.ts';
import { storedFromTexts } from '../stored-doc.ts';
import {
  bytesOf,
  dropStaleIndex,
  HISTORY_COUNTS,
  HISTORY_FROM,
  HISTORY_INDEXES,
  HISTORY_PLACEMENTS,
  HISTORY_SHARED,
  HISTORY_VERSIONS,
  IDS_PER_READ,
  STALE_VERSIONS_INDEX,
  textsOf,
  versionKey,
  type CountDoc,
  type FromDoc,
  type PlacementDoc,
  type SharedDoc,
  type VersionDoc,
} from './mongodb-history-layout.ts';
import { createMongoHistoryWriter, type HistoryWrite } from './mongodb-history-write.ts';

/** A position as an index bound: a whole number in [0, OPEN_END]. */
const position = (at: number) => Math.max(0, Math.min(OPEN_END, Math.floor(at)));

const facetFilter = (facets: readonly string[] | undefined) =>
  facets === undefined ? {} : { facet: { $in: [...facets] } };

/** A version as read: `texts` holds the shared texts its row may name (sharedTexts). */
const toVersion = <D>(row: VersionDoc, texts: ReadonlyMap<string, Uint8Array>): Version<D> =>
  storedFromTexts<D, null>({
    id: row.id,
    doc: wholeText(row, texts),
    state: undefined,
    seq: row.from,
    writtenAt: row.writtenAt,
    sortKey: row.sortKey,
    facet: row.facet,
    keys: '{}',
  });

/** A version's whole text: its `doc`, with its shared member put back when it has one. */
function wholeText(row: VersionDoc, texts: ReadonlyMap<string, Uint8Array>): Uint8Array {
  if (row.shared === undefined || row.at === undefined) return bytesOf(row.doc);
  const member = texts.get(row.shared);
  if (member === undefined) throw new Error(`history: the shared text of version ${row._id} is missing`);
  return joinVersion(bytesOf(row.doc), member, row.at);
}

/** Rows in the order of `ids` (a page's placements), from rows in any order. */
function inOrder<R extends { id: string }>(ids: readonly string[], rows: readonly R[]): R[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    return row ? [row] : [];
  });
}

export type MongoHistory = HistoryStore & {
  /** Creates the indexes (idempotent), once per process. */
  ensureIndexes(): Promise<void>;
  /**
   * Records, once per collection, the position the model starts from: 0 for a collection not yet
   * written, else its checkpoint (a store written before the model). Every commit waits for it.
   */
  ensureStarted(
    collection: string,
    inTransaction: (work: (session: ClientSession) => Promise<void>) => Promise<void>,
  ): Promise<void>;
  /**
   * Records a commit's writes inside its transaction, in log order across documents: one read of the
   * batch's open versions (and one per 1000 of their shared texts, when they have any), one of the latest
   * counts, and one bulk write per collection touched.
   */
  write(collection: string, writes: readonly HistoryWrite[], session: ClientSession): Promise<void>;
  /** Forgets which collections were started (after `clear`). */
  forget(): void;
};

/** The history of one generation; `checkpoints` is that generation's checkpoint collection. */
export function createMongoHistory(
  client: MongoClient,
  db: Db,
  names: (base: string) => string,
  checkpoints: Collection<{ _id: string; position: number }>,
): MongoHistory {
  const versions = db.collection<VersionDoc>(names(HISTORY_VERSIONS));
  const placements = db.collection<PlacementDoc>(names(HISTORY_PLACEMENTS));
  const counts = db.collection<CountDoc>(names(HISTORY_COUNTS));
  const recorded = db.collection<FromDoc>(names(HISTORY_FROM));
  const sharedTexts = db.collection<SharedDoc>(names(HISTORY_SHARED));

  /** `rows` as versions, in their order, their shared texts put back. */
  async function versionsOf<D>(rows: readonly VersionDoc[], session?: ClientSession): Promise<Version<D>[]> {
    const texts = await textsOf(sharedTexts, rows, session);
    return rows.map((row) => toVersion<D>(row, texts));
  }
  let indexes: Promise<void> | undefined;
  const started = new Map<string, Promise<void>>();

  /** The versions valid at `at` of `ids`: to in (at, OPEN_END], from in [0, at] (at most one each). */
  async function validAt(collection: string, ids: readonly string[], at: number, session?: ClientSession) {
    const rows: VersionDoc[] = [];
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += IDS_PER_READ) {
      rows.push(
        ...(await versions
          .find(
            {
              c: collection,
              id: { $in: unique.slice(i, i + IDS_PER_READ) },
              to: { $gt: at, $lte: OPEN_END },
              from: { $gte: 0, $lte: at },
            },
            { hint: 'history_open', ...(session ? { session } : {}) },
          )
          .toArray()),
      );
    }
    return rows;
  }

  async function countAt(
    collection: string,
    at: number,
    facets: readonly string[] | undefined,
    session?: ClientSession,
  ): Promise<number> {
    if (facets !== undefined && facets.length === 0) return 0;
    const row = await counts
      .find(
        { c: collection, at: { $gte: 0, $lte: position(at) } },
        { projection: { counts: 1 }, hint: 'count_at', ...(session ? { session } : {}) },
      )
      .sort({ at: -1 })
      .limit(1)
      .next();
    let total = 0;
    for (const { facet, n } of row?.counts ?? []) if (facets === undefined || facets.includes(facet)) total += n;
    return total;
  }

  /** Ids of the placements valid at `at`, in listing order (newest first, or oldest first when `ascending`). */
  async function placedAt(
    collection: string,
    at: number,
    facets: readonly string[] | undefined,
    page: { skip?: number; limit: number; ascending?: boolean; after?: { sortKey: string; id: string } },
    session?: ClientSession,
  ): Promise<string[]> {
    const filter: Filter<PlacementDoc> = {
      c: collection,
      ...facetFilter(facets),
      from: { $lte: at },
      to: { $gt: at },
    };
    if (page.after) {
      filter.sortKey = { $lte: page.after.sortKey };
      filter.$or = [{ sortKey: { $lt: page.after.sortKey } }, { id: { $lt: page.after.id } }];
    }
    const direction = page.ascending ? 1 : -1;
    const rows = await placements
      .find(filter, {
        // Covered by the index: the placements skipped are keys, never fetched.
        projection: { _id: 0, id: 1 },
        hint: facets === undefined ? 'placement_listing' : 'placement_facet',
        ...(session ? { session } : {}),
      })
      .sort({ sortKey: direction, id: direction })
      .skip(page.skip ?? 0)
      .limit(page.limit)
      .toArray();
    return rows.map((row) => row.id);
  }

  const point = (row: { from: number; writtenAt: string } | null): WritePoint | null =>
    row ? { seq: row.from, writtenAt: row.writtenAt } : null;

  return {
    async ensureIndexes() {
      indexes ??= Promise.all(
        Object.entries(HISTORY_INDEXES).map(([name, specs]) =>
          db.collection(names(name)).createIndexes(specs.map((spec) => ({ key: { ...spec.key }, name: spec.name }))),
        ),
      ).then(() => dropStaleIndex(versions, STALE_VERSIONS_INDEX));
      indexes.catch(() => {
        indexes = undefined;
      });
      await indexes;
    },

    async ensureStarted(collection, inTransaction) {
      let pending = started.get(collection);
      if (!pending) {
        pending = (async () => {
          if (await recorded.findOne({ _id: collection }, { projection: { _id: 1 } })) return;
          // In one transaction with the checkpoint read: a commit of this version waits for the
          // marker, so none lands between them; a concurrent starter conflicts and retries.
          await inTransaction(async (session) => {
            const checkpoint = (await checkpoints.findOne({ _id: collection }, { session }))?.position ?? 0;
            await recorded.updateOne(
              { _id: collection },
              { $setOnInsert: { position: checkpoint } },
              { upsert: true, session },
            );
          });
        })();
        started.set(collection, pending);
        pending.catch(() => started.delete(collection));
      }
      await pending;
    },

    ...createMongoHistoryWriter({ versions, placements, counts, sharedTexts }),

    forget: () => started.clear(),

    async recordedFrom(collection) {
      const row = await recorded.findOne({ _id: collection });
      if (row) return row.position;
      // Not started yet: the first commit of this version will record from the checkpoint there is now.
      return (await checkpoints.findOne({ _id: collection }))?.position ?? 0;
    },

    async pointAtSeq(collection, seq) {
      const row = await versions
        .find(
          { c: collection, from: { $gte: 0, $lte: position(seq) } },
          { projection: { from: 1, writtenAt: 1 }, hint: 'history_delta' },
        )
        .sort({ from: -1, id: -1 })
        .limit(1)
        .next();
      return point(row);
    },

    async get<D>(collection: string, id: string, at: number) {
      if (at < 0) return null;
      const row = await versions
        .find(
          { _id: { $gte: versionKey(collection, id, 0), $lte: versionKey(collection, id, position(at)) } },
          { hint: '_id_' },
        )
        .sort({ _id: -1 })
        .limit(1)
        .next();
      return row ? ((await versionsOf<D>([row]))[0] ?? null) : null;
    },

    async getMany<D>(collection: string, ids: readonly string[], at: number) {
      const found = new Map<string, Version<D>>();
      if (at < 0) return found;
      for (const version of await versionsOf<D>(await validAt(collection, ids, position(at))))
        found.set(version.id, version);
      return found;
    },

    async list<D>(collection: string, at: number, query: HistoryPageQuery): Promise<ListPage<D>> {
      // The total and the rows from one snapshot (as the live board's), the page read from the nearer end.
      const session = client.startSession({ snapshot: true });
      try {
        const total = await countAt(collection, at, query.facets, session);
        const limit = Math.max(0, Math.min(query.limit, total - query.offset));
        if (limit === 0) return { total, docs: [] };
        const fromEnd = total - query.offset - limit;
        const ascending = fromEnd < query.offset;
        const ids = await placedAt(
          collection,
          position(at),
          query.facets,
          { skip: ascending ? fromEnd : query.offset, limit, ascending },
          session,
        );
        if (ascending) ids.reverse();
        const rows = inOrder(ids, await validAt(collection, ids, position(at), session));
        return { total, docs: await versionsOf<D>(rows, session) };
      } finally {
        await session.endSession();
      }
    },

    async count(collection, at, facets) {
      return countAt(collection, at, facets);
    },

    async scan<D>(collection: string, at: number, query: HistoryScanQuery) {
      if (query.limit <= 0) return [];
      // A point at or before the checkpoint never changes: the two reads need no common snapshot.
      const ids = await placedAt(collection, position(at), query.facets, {
        limit: query.limit,
        ...(query.after ? { after: query.after } : {}),
      });
      return versionsOf<D>(inOrder(ids, await validAt(collection, ids, position(at))));
    },

    async changes<D>(collection: string, query: HistoryChangesQuery) {
      const found: VersionChange<D>[] = [];
      if (query.limit <= 0) return found;
      const from = position(query.from);
      const to = position(query.to);
      let after = query.after;
      // Rows whose document is the same at both points are left out: read on until the page is full.
      for (;;) {
        const filter: Filter<VersionDoc> = {
          c: collection,
          from: { $gt: from, $lte: to, ...(after ? { $gte: after.seq } : {}) },
          // Valid at `to`: the writes overwritten before it are keys passed over, never fetched.
          to: { $gt: to, $lte: OPEN_END },
          ...(after ? { $or: [{ from: { $gt: after.seq } }, { id: { $gt: after.id } }] } : {}),
        };
        const rows = await versions
          .find(filter, { hint: 'history_delta' })
          .sort({ from: 1, id: 1 })
          .limit(query.limit)
          .toArray();
        if (rows.length === 0) break;
        // Each one's version valid at `from`: it ends in (from, its successor's start], and began at or before `from`.
        const before = new Map<string, VersionDoc>();
        const ids = rows.map((row) => row.id);
        for (let i = 0; i < ids.length; i += IDS_PER_READ) {
          const earlier = await versions
            .find(
              {
                c: collection,
                id: { $in: ids.slice(i, i + IDS_PER_READ) },
                to: { $gt: from, $lte: to },
                from: { $gte: 0, $lte: from },
              },
              { hint: 'history_open' },
            )
            .toArray();
          for (const row of earlier) before.set(row.id, row);
        }
        const texts = await textsOf(sharedTexts, [...rows, ...before.values()]);
        for (const row of rows) {
          const was = before.get(row.id);
          const after = wholeText(row, texts);
          if (was && Buffer.compare(wholeText(was, texts), after) === 0) continue;
          found.push({ after: toVersion<D>(row, texts), before: was ? toVersion<D>(was, texts) : null });
          if (found.length === query.limit) return found;
        }
        if (rows.length < query.limit) break;
        const last = rows[rows.length - 1]!;
        after = { seq: last.from, id: last.id };
      }
      return found;
    },
  };
}
