/**
 * The ReadStore port on MongoDB, through the `mongodb` driver: its layout (collections per generation,
 * documents, indexes) in mongodb-layout.ts, its commit in mongodb-commit.ts, the board's listing reads
 * in mongodb-listing.ts; here the lookups by id and key, the transactions they share, clear and close.
 *
 * Indexes for every query of the port are created the first time this process writes to a collection
 * (createIndexes is idempotent); collections are only written by commit, so none exists without them.
 */
import { MongoClient, type ClientSession, type Collection, type Db } from 'mongodb';
import type { ReadStore, StoredDoc } from '../port.ts';
import { createMongoCommit } from './mongodb-commit.ts';
import { namedMongoError } from './mongodb-faults.ts';
import { createMongoHistory } from './mongodb-history.ts';
import {
  CHECKPOINTS,
  CHUNKS,
  COLLECTION_NAME,
  COUNTS,
  fromMongo,
  GENERATION_SUFFIX,
  generationCollection,
  generationOfCollection,
  INDEXES,
  lookupEntry,
  type CheckpointDoc,
  type CounterDoc,
  type MongoDoc,
} from './mongodb-layout.ts';
import { createMongoChunks, type ChunkDoc } from './mongodb-list-chunks.ts';
import { createMongoListing } from './mongodb-listing.ts';

const GET_MANY_CHUNK = 1000;

/** The read store of generation 0, with a client of its own (tests, tools); serving goes through generations. */
export function createMongoReadStore(url: string): ReadStore {
  return mongoReadStoreOn(new MongoClient(url), 0, { ownsClient: true });
}

/**
 * The read store of one generation over `client`. With `ownsClient: false`, `close` leaves the
 * client open for the other generations that share it.
 */
export function mongoReadStoreOn(
  client: MongoClient,
  generation: number,
  options: {
    ownsClient: boolean;
    /** A replay's build: whether its lock is still the newest, asked inside each commit's transaction. */
    fenced?: (session: ClientSession) => Promise<boolean>;
  },
): ReadStore {
  const db: Db = client.db();
  const checkpoints = db.collection<CheckpointDoc>(generationCollection(CHECKPOINTS, generation));
  // What a reader files a kept body under is read at majority, as a page's snapshot reads are: a
  // checkpoint a commit moved on the primary before enough members had it would otherwise be paired
  // with a page read from before that commit, and the page kept under it until the next commit.
  const committedCheckpoints = db.collection<CheckpointDoc>(generationCollection(CHECKPOINTS, generation), {
    readConcern: { level: 'majority' },
  });
  const counters = db.collection<CounterDoc>(generationCollection(COUNTS, generation));
  const chunks = createMongoChunks(db.collection<ChunkDoc>(generationCollection(CHUNKS, generation)));
  const history = createMongoHistory(client, db, (base) => generationCollection(base, generation), checkpoints);
  let chunkIndex: Promise<void> | undefined;
  const ensured = new Map<string, Promise<void>>();
  let transactionsChecked: Promise<void> | undefined;

  function collectionOf(name: string): Collection<MongoDoc> {
    // A name ending in _v<N> would be read as another generation's collection, and _pulseboard… names are ours.
    if (
      !COLLECTION_NAME.test(name) ||
      name.startsWith('system.') ||
      name.startsWith('_pulseboard') ||
      GENERATION_SUFFIX.test(name)
    ) {
      throw new TypeError(`read-model collection name ${JSON.stringify(name)} is not usable as a MongoDB collection`);
    }
    return db.collection<MongoDoc>(generationCollection(name, generation));
  }

  async function ensureIndexes(name: string): Promise<Collection<MongoDoc>> {
    const collection = collectionOf(name);
    let pending = ensured.get(name);
    if (!pending) {
      chunkIndex ??= chunks.ensureIndex();
      chunkIndex.catch(() => {
        chunkIndex = undefined;
      });
      pending = Promise.all([
        collection.createIndexes(INDEXES.map((index) => ({ key: { ...index.key }, name: index.name }))),
        chunkIndex,
        history.ensureIndexes(),
      ]).then(() => undefined);
      ensured.set(name, pending);
      pending.catch(() => ensured.delete(name));
    }
    await pending;
    return collection;
  }

  async function checkTransactions(): Promise<void> {
    transactionsChecked ??= (async () => {
      const hello = await db.admin().command({ hello: 1 });
      if (typeof hello.setName !== 'string' && hello.msg !== 'isdbgrid') {
        throw new Error(
          'the MongoDB read store commits in transactions, which need a replica set: start mongod with --replSet ' +
            '(a one-node replica set is enough) and name it in the URL, e.g. ?replicaSet=rs0',
        );
      }
    })();
    transactionsChecked.catch(() => {
      transactionsChecked = undefined;
    });
    await transactionsChecked;
  }

  /** Sessions with a transaction under way: `close` aborts them. */
  const open = new Set<ClientSession>();
  let closing = false;

  async function inTransaction(work: (session: ClientSession) => Promise<void>): Promise<void> {
    if (closing) throw new Error('the MongoDB read store is closed');
    const session = client.startSession();
    open.add(session);
    try {
      await session.withTransaction(() => work(session), {
        readConcern: { level: 'snapshot' },
        writeConcern: { w: 'majority' },
      });
    } catch (error) {
      // A full disk or an unconfirmed write is named by its code for the projector's log and /readyz.
      throw namedMongoError(error);
    } finally {
      open.delete(session);
      await session.endSession();
    }
  }

  /**
   * Aborts every transaction still under way (a worker stopped mid-commit): left open, its locks on the
   * checkpoint, counter and chunk documents would hold every other writer until MongoDB's 60 s limit.
   */
  async function abortOpen(): Promise<void> {
    closing = true;
    await Promise.all(
      [...open].map(async (session) => {
        open.delete(session);
        await session.abortTransaction().catch(() => undefined);
        await session.endSession().catch(() => undefined);
      }),
    );
  }

  /** A transaction, after the check that the server can run one (its message says what to do when not). */
  async function checkedTransaction(work: (session: ClientSession) => Promise<void>): Promise<void> {
    await checkTransactions();
    await inTransaction(work);
  }

  const listing = createMongoListing({
    client,
    counters,
    chunks,
    collectionOf,
    checkTransactions,
    inTransaction,
    checkedTransaction,
  });
  const committer = createMongoCommit({
    checkpoints,
    counters,
    chunks,
    history,
    ensureIndexes,
    ensureCounted: listing.ensureCounted,
    checkTransactions,
    inTransaction,
    checkedTransaction,
    fenced: options.fenced,
  });

  return {
    history,
    ...listing.reads,

    async checkpoint(collection) {
      const row = await committedCheckpoints.findOne({ _id: collection });
      return row?.position ?? 0;
    },

    ...committer,

    async get<D, S>(collection: string, id: string) {
      const row = await collectionOf(collection).findOne({ _id: id });
      return row ? fromMongo<D, S>(row) : null;
    },

    async getMany<D, S>(collection: string, ids: readonly string[]) {
      const found = new Map<string, StoredDoc<D, S>>();
      const target = collectionOf(collection);
      const unique = [...new Set(ids)];
      for (let i = 0; i < unique.length; i += GET_MANY_CHUNK) {
        const rows = await target.find({ _id: { $in: unique.slice(i, i + GET_MANY_CHUNK) } }).toArray();
        for (const row of rows) found.set(row._id, fromMongo<D, S>(row));
      }
      return found;
    },

    async findIds(collection, key, value, limit) {
      // MongoDB reads limit 0 as "no limit".
      if (limit <= 0) return [];
      const rows = await collectionOf(collection)
        .find({ lookup: lookupEntry(key, value) }, { projection: { _id: 1 }, hint: 'lookup' })
        .sort({ _id: 1 })
        .limit(limit)
        .toArray();
      return rows.map((row) => row._id);
    },

    async findDocs<D, S>(collection: string, key: string, value: string, limit: number) {
      // MongoDB reads limit 0 as "no limit". One query: each document matches the value as it is read.
      if (limit <= 0) return [];
      const rows = await collectionOf(collection)
        .find({ lookup: lookupEntry(key, value) }, { hint: 'lookup' })
        .sort({ _id: 1 })
        .limit(limit)
        .toArray();
      return rows.map((row) => fromMongo<D, S>(row));
    },

    async findKeysByPrefix(collection, key, prefix, limit) {
      if (limit <= 0) return [];
      // Entries are JSON texts: an escaped value starts with the escaped prefix exactly when the value starts with the prefix.
      const entry = lookupEntry(key, prefix);
      const range = { $gte: entry.slice(0, -2), $lt: `${entry.slice(0, -2)}\u{10FFFF}` };
      // The lookup index's range; the top-`limit` sort keeps at most `limit` rows in memory.
      const rows = await collectionOf(collection)
        .aggregate<{ _id: string; lookup: string }>([
          { $match: { lookup: { $elemMatch: range } } },
          { $project: { lookup: 1 } },
          { $unwind: '$lookup' },
          { $match: { lookup: range } },
          { $sort: { lookup: 1, _id: 1 } },
          { $limit: limit },
        ])
        .toArray();
      return rows.map((row) => ({ value: (JSON.parse(row.lookup) as [string, string])[1], id: row._id }));
    },

    async findIdsMany(collection, key, values, limit) {
      const found = new Map<string, string[]>();
      if (values.length === 0 || limit <= 0) return found;
      const wanted = new Map([...new Set(values)].map((value) => [lookupEntry(key, value), value]));
      // One query for every value; the per-value limit is applied here, so a value held by many documents
      // reads them all (ids only). Lookup values name few documents each (a chain:contract, a handle).
      const rows = await collectionOf(collection)
        .find({ lookup: { $in: [...wanted.keys()] } }, { projection: { _id: 1, lookup: 1 }, hint: 'lookup' })
        .sort({ _id: 1 })
        .toArray();
      for (const row of rows) {
        for (const entry of row.lookup) {
          const value = wanted.get(entry);
          if (value === undefined) continue;
          const ids = found.get(value) ?? [];
          if (ids.length < limit) ids.push(row._id);
          found.set(value, ids);
        }
      }
      return found;
    },

    async clear() {
      // Every collection of this generation (read models and checkpoints) is emptied, its indexes kept;
      // other generations and the generation pointer are left alone.
      const collections = await db.listCollections({}, { nameOnly: true }).toArray();
      for (const { name } of collections) {
        if (generationOfCollection(name) === generation) await db.collection(name).deleteMany({});
      }
      listing.forget();
      chunks.forget();
      history.forget();
    },

    async close() {
      await abortOpen();
      if (options.ownsClient) await client.close();
    },
  };
}
