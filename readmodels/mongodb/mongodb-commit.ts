import { facetDeltas } from '../list-chunks.ts';
import type { AnyBulkWriteOperation, ClientSession, Collection } from 'mongodb';
import type { CommitOutcome, ReadStore } from '../port.ts';
import { ReplayFencedError } from '../generations/port.ts';
import {
  counterId,
  listedRows,
  toMongo,
  type CheckpointDoc,
  type CounterDoc,
  type MongoDoc,
} from './mongodb-layout.ts';
import type { MongoHistory } from './mongodb-history.ts';
import type { MongoChunks, RowMove } from './mongodb-list-chunks.ts';

/**
 * The commit. Whatever the batch's size, a commit is a fixed number of server calls inside one
 * multi-document transaction: the checkpoint read, one read of the batch's previous facets and sort
 * keys (ids only, `$in`), one unordered bulk write of the per-facet counter sums (`$inc`), one unordered
 * bulk write of whole-document replacements (one per id: the last write of an id wins, so no operation
 * depends on another's order), one read of the listing's chunk starts and one unordered bulk write of
 * chunk counts (`$inc`, only when the batch adds documents or moves one's sort key or facet), one read
 * of the chunks it grew past their bound (and, rarely, a cut of each: one read of its rows, one delete,
 * one insert), for a batch carrying versions the history's reads and writes (mongodb-history.ts: one read
 * of the open versions, one of their shared texts, one of the latest counts, a bulk write per history
 * collection), and the checkpoint advanced with a compare-and-set on the value read before the batch.
 * A crash leaves either the whole batch with its checkpoint and counts or none of them, as the port
 * promises and as the SQLite store (one transaction, triggers for the counts) does. Transactions need a
 * replica set (a one-node one is enough, as in docker-compose.yml); a commit against a standalone
 * server fails with a message saying so.
 */

/** Runs `work` in one transaction (retried by the driver on a transient error). */
export type Transaction = (work: (session: ClientSession) => Promise<void>) => Promise<void>;

/**
 * The rows a commit moved: new ones, and those whose sort key or facet changed, from the batch's
 * previous facets and sort keys. `rows` holds one row per id (the batch's last write of it).
 */
export function rowMoves(
  before: readonly { _id: string; facet: string; sortKey: string }[],
  rows: readonly { _id: string; facet: string; sortKey: string }[],
): RowMove[] {
  const previous = new Map(before.map((row) => [row._id, row]));
  const moves: RowMove[] = [];
  for (const row of rows) {
    const was = previous.get(row._id);
    if (was && was.facet === row.facet && was.sortKey === row.sortKey) continue;
    moves.push({
      ...(was ? { from: { key: was.sortKey, id: row._id, facet: was.facet } } : {}),
      to: { key: row.sortKey, id: row._id, facet: row.facet },
    });
  }
  return moves;
}

/** The commit of the MongoDB read store (ReadStore.commit), one transaction per batch. */
export function createMongoCommit(deps: {
  checkpoints: Collection<CheckpointDoc>;
  counters: Collection<CounterDoc>;
  chunks: MongoChunks;
  history: MongoHistory;
  ensureIndexes: (name: string) => Promise<Collection<MongoDoc>>;
  ensureCounted: (name: string) => Promise<void>;
  checkTransactions: () => Promise<void>;
  inTransaction: Transaction;
  checkedTransaction: Transaction;
  fenced?: (session: ClientSession) => Promise<boolean>;
}): Pick<ReadStore, 'commit'> {
  const { checkpoints, counters, chunks, history, ensureIndexes, ensureCounted, checkTransactions } = deps;
  const { inTransaction, checkedTransaction, fenced } = deps;
  return {
    async commit(collection, writes, checkpoint, expected) {
      // Serialised first: a document that is not JSON fails the commit before anything is written.
      // One row per id, the last write of it, so the bulk writes below need no order.
      const rows = [...new Map(writes.map((write) => [write.id, toMongo(write)])).values()];
      const target = await ensureIndexes(collection);
      await checkTransactions();
      await ensureCounted(collection);
      await chunks.ensureChunked(collection, listedRows(target), checkedTransaction);
      await history.ensureStarted(collection, inTransaction);
      let outcome: CommitOutcome = { ok: true };
      await inTransaction(async (session) => {
        if (fenced && !(await fenced(session))) throw new ReplayFencedError();
        // The driver re-runs this callback on a transient error, so whatever is compared must come from
        // the caller (the checkpoint its batch started from), never from a read made inside the callback.
        const stored = (await checkpoints.findOne({ _id: collection }, { session }))?.position;
        if (expected !== undefined && (stored ?? 0) !== expected) {
          outcome = { ok: false, reason: 'checkpoint_moved', actual: stored ?? 0 };
          return;
        }
        outcome = { ok: true };
        if (rows.length > 0) {
          // One read of the batch's previous facets and sort keys (never of whole documents) keeps the counts exact.
          const before = await target
            .find({ _id: { $in: rows.map((row) => row._id) } }, { projection: { facet: 1, sortKey: 1 }, session })
            .toArray();
          const moves = rowMoves(before, rows);
          const deltas = facetDeltas(moves);
          if (deltas.size > 0) {
            await counters.bulkWrite(
              [...deltas].map(([facet, by]) => ({
                updateOne: {
                  filter: { _id: counterId(collection, facet) },
                  update: { $inc: { n: by }, $setOnInsert: { collection, facet } },
                  upsert: true,
                },
              })),
              { ordered: false, session },
            );
          }
          const operations: AnyBulkWriteOperation<MongoDoc>[] = rows.map((row) => ({
            replaceOne: { filter: { _id: row._id }, replacement: row, upsert: true },
          }));
          await target.bulkWrite(operations, { ordered: false, session });
          await chunks.apply(collection, moves, listedRows(target), session);
          await history.write(collection, writes, session);
        }
        // Conditional on the value read in this same transaction: a concurrent writer makes this a write
        // conflict (the transaction retries and the check above then refuses), never a lost batch.
        const advanced =
          stored === undefined
            ? await checkpoints.updateOne(
                { _id: collection },
                { $setOnInsert: { position: checkpoint } },
                { upsert: true, session },
              )
            : await checkpoints.updateOne(
                { _id: collection, position: stored },
                { $set: { position: checkpoint } },
                { session },
              );
        if (advanced.matchedCount + advanced.upsertedCount !== 1) {
          throw new Error(`checkpoint of ${collection} moved during the commit`);
        }
      });
      return outcome;
    },
  };
}
