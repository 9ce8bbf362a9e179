import type { ClientSession, Collection, Filter, MongoClient } from 'mongodb';
import type { DeltaQuery, KeysetQuery, ListPage, ListQuery, ReadStore } from '../port.ts';
import {
  counterId,
  deltaHint,
  facetFilter,
  fromMongo,
  listedRows,
  listingHint,
  LISTED,
  type CounterDoc,
  type MongoDoc,
} from './mongodb-layout.ts';
import { boundFilter, type MongoChunks } from './mongodb-list-chunks.ts';
import type { Transaction } from './mongodb-commit.ts';

export type MongoListing = {
  /** Counts a collection written before the counters existed, once; every commit and total waits for it. */
  ensureCounted(name: string): Promise<void>;
  /** Forgets which collections are counted (after `clear`). */
  forget(): void;
  reads: Pick<ReadStore, 'list' | 'count' | 'listKeyset' | 'delta'>;
};

/**
 * The board's reads (pages by number, keyset pages, deltas and totals), each a hinted range of the
 * listing or delta index, its total from the per-facet counters each commit keeps (mongodb-commit.ts).
 */
export function createMongoListing(deps: {
  client: MongoClient;
  counters: Collection<CounterDoc>;
  chunks: MongoChunks;
  collectionOf: (name: string) => Collection<MongoDoc>;
  checkTransactions: () => Promise<void>;
  inTransaction: Transaction;
  checkedTransaction: Transaction;
}): MongoListing {
  const { client, counters, chunks, collectionOf, checkTransactions, inTransaction, checkedTransaction } = deps;
  /**
   * A collection written before the counters existed is counted once and marked as counted by a zero
   * counter with facet ''. The count runs outside any transaction (over a large collection it takes
   * longer than MongoDB's 60 s transaction limit): nothing writes the collection meanwhile, since every
   * commit of this version waits for the marker. The counters are then written in a short transaction
   * that first checks the marker is still absent (another process may have counted and committed since).
   */
  const counted = new Map<string, Promise<void>>();
  async function ensureCounted(name: string): Promise<void> {
    let pending = counted.get(name);
    if (!pending) {
      pending = (async () => {
        const marker = counterId(name, '');
        if (await counters.findOne({ _id: marker }, { projection: { _id: 1 } })) return;
        await checkTransactions();
        const groups = await collectionOf(name)
          .aggregate<{ _id: string; n: number }>([{ $group: { _id: '$facet', n: { $sum: 1 } } }])
          .toArray();
        await inTransaction(async (session) => {
          if (await counters.findOne({ _id: marker }, { projection: { _id: 1 }, session })) return;
          const rows: CounterDoc[] = [
            { _id: marker, collection: name, facet: '', n: 0 },
            ...groups.map((g) => ({ _id: counterId(name, g._id), collection: name, facet: g._id, n: g.n })),
          ];
          await counters.bulkWrite(
            rows.map((row) => ({ replaceOne: { filter: { _id: row._id }, replacement: row, upsert: true } })),
            { ordered: true, session },
          );
        });
      })();
      counted.set(name, pending);
      pending.catch(() => counted.delete(name));
    }
    await pending;
  }

  async function count(
    collection: string,
    facets: readonly string[] | undefined,
    session?: ClientSession,
  ): Promise<number> {
    await ensureCounted(collection);
    if (facets !== undefined && facets.length === 0) return 0;
    const filter: Filter<CounterDoc> =
      facets === undefined ? { collection } : { _id: { $in: facets.map((f) => counterId(collection, f)) } };
    const rows = await counters.find(filter, { projection: { n: 1 }, ...(session ? { session } : {}) }).toArray();
    return rows.reduce((sum, row) => sum + row.n, 0);
  }

  return {
    ensureCounted,
    forget: () => counted.clear(),
    reads: {
      async list<D>(collection: string, query: ListQuery): Promise<ListPage<D>> {
        // Read from whichever end of the listing is nearer (the exact total comes from the counters),
        // starting at the edge of the chunk the page falls in (readmodels/list-chunks.ts): a page costs
        // the chunk counts before it and a skip of at most one chunk in the listing index, at any depth.
        const target = collectionOf(collection);
        await ensureCounted(collection);
        await chunks.ensureChunked(collection, listedRows(target), checkedTransaction);
        // The total, the chunks' counts and the rows come from one snapshot of the server (a snapshot
        // session: each read at the cluster time of the first), as in SQLite's read transaction.
        const session = client.startSession({ snapshot: true });
        try {
          const total = await count(collection, query.facets, session);
          const limit = Math.max(0, Math.min(query.limit, total - query.offset));
          if (limit === 0) return { total, docs: [] };
          const fromEnd = total - query.offset - limit;
          const reversed = fromEnd < query.offset;
          const direction = reversed ? 1 : -1;
          const start = await chunks.locate(
            collection,
            query.facets,
            reversed,
            reversed ? fromEnd : query.offset,
            session,
          );
          const bound = start.bound ? boundFilter(start.bound, reversed) : {};
          const pageFilter = { ...facetFilter(query.facets), ...bound } as Filter<MongoDoc>;
          const rows = await target
            .find(pageFilter, {
              ...LISTED,
              hint: listingHint(query.facets),
              session,
            })
            .sort({ sortKey: direction, _id: direction })
            .skip(start.skip)
            .limit(limit)
            .toArray();
          if (reversed) rows.reverse();
          return { total, docs: rows.map((row) => fromMongo<D, unknown>(row)) };
        } finally {
          await session.endSession();
        }
      },

      async count(collection, facets) {
        return count(collection, facets);
      },

      async listKeyset<D>(collection: string, query: KeysetQuery) {
        if (query.limit <= 0) return [];
        const filter: Filter<MongoDoc> = { ...facetFilter(query.facets) };
        if (query.before) {
          const { sortKey, id } = query.before;
          filter.sortKey = { $lte: sortKey };
          filter.$or = [{ sortKey: { $lt: sortKey } }, { _id: { $lt: id } }];
        }
        const rows = await collectionOf(collection)
          .find(filter, { ...LISTED, hint: listingHint(query.facets) })
          .sort({ sortKey: -1, _id: -1 })
          .limit(query.limit)
          .toArray();
        return rows.map((row) => fromMongo<D, unknown>(row));
      },

      async delta<D>(collection: string, query: DeltaQuery) {
        if (query.limit <= 0) return [];
        const target = collectionOf(collection);
        let filter: Filter<MongoDoc>;
        if ('after' in query.start) {
          // Both bounds on seq: every page is a range of the delta index starting at the cursor, at any depth.
          const { seq, id } = query.start.after;
          filter = {
            seq: { $gte: seq, $lte: query.upToSeq },
            $or: [{ seq: { $gt: seq } }, { _id: { $gt: id } }],
            ...facetFilter(query.facets),
          };
        } else {
          // writtenAt never decreases with seq (both come from the log): a time maps to a first seq.
          const first = await target
            .find({ writtenAt: { $gte: query.start.fromWrittenAt } }, { projection: { seq: 1 }, hint: 'written_seq' })
            .sort({ writtenAt: 1, seq: 1 })
            .limit(1)
            .next();
          if (!first) return [];
          filter = { seq: { $gte: first.seq, $lte: query.upToSeq }, ...facetFilter(query.facets) };
        }
        const rows = await target
          .find(filter, { ...LISTED, hint: deltaHint(query.facets) })
          .sort({ seq: 1, _id: 1 })
          .limit(query.limit)
          .toArray();
        return rows.map((row) => fromMongo<D, unknown>(row));
      },
    },
  };
}
