/**
 * The ReadStore port on MongoDB, through the `mongodb` driver.
 *
 * Layout. One MongoDB collection per read-model collection and generation, in the database the URL
 * names (e.g. mongodb://host/pulseboard?replicaSet=rs0): generation 0 uses the read model's own name,
 * generation N ≥ 1 (built by `pulseboard replay`, readmodels/mongodb/mongodb-generations.ts) the name
 * with `_v<N>` appended. A document carries the StoredDoc fields with
 * `_id` = id; `doc`, `state` and `keys` are kept as JSON text so what a projector wrote comes back
 * byte-identical (key order, `$`/`.` in keys, lone surrogates — none of which BSON round-trips
 * reliably), `doc` as that text's UTF-8 bytes (BSON binary: the driver hands them over as a view of
 * the reply, so a response is written from them without decoding and encoding the text; a `doc`
 * written as a BSON string by an earlier version reads too), and `lookup` holds the [key, value] pairs of `keys` for the findIds index.
 * Checkpoints live in `_pulseboard_checkpoints` (`_pulseboard_checkpoints_v<N>`) as {_id: collection, position};
 * documents per (collection, facet) in `_pulseboard_counts` (`…_v<N>`), updated by each commit in its
 * transaction from the facets the batch changed, so a board total is never a countDocuments; and the
 * listing's chunks in `_pulseboard_chunks` (`…_v<N>`, mongodb-list-chunks.ts), so a board page by
 * number starts at a chunk's edge instead of a skip from the end of the listing. The history read model
 * (every public write with its validity range) is kept in `_pulseboard_history_*` (`…_v<N>`, mongodb-history.ts).
 *
 * Commits. Whatever the batch's size, a commit is a fixed number of server calls inside one
 * multi-document transaction: the checkpoint read, one read of the batch's previous facets and sort
 * keys (ids only, `$in`), one unordered bulk write of the per-facet counter sums (`$inc`), one unordered
 * bulk write of whole-document replacements (one per id: the last write of an id wins, so no operation
 * depends on another's order), one read of the listing's chunk starts and one unordered bulk write of
 * chunk counts (`$inc`, only when the batch adds documents or moves one's sort key or facet), one read
 * of the chunks it grew past their bound (and, rarely, a cut of each: one read of its rows, one delete,
 * one insert), for a batch carrying versions the history's reads and writes (mongodb-history.ts: one read
 * of the open versions, one of their shared texts, one of the latest counts, a bulk write per history
 * collection), and the checkpoint
 * advanced with a compare-and-set on the value read before the batch.
 * A crash leaves either the whole batch with its checkpoint and counts or none of
 * them, as the port promises and as the SQLite store (one transaction, triggers for the counts) does. Transactions need a replica set (a one-node one is
 * enough, as in docker-compose.yml); a commit against a standalone server fails with a message saying so.
 *
 * Indexes for every query of the port are created the first time this process writes to a collection
 * (createIndexes is idempotent); collections are only written by commit, so none exists without them.
 */
import { facetDeltas } from '../list-chunks.ts';
import {
  Binary,
  MongoClient,
  type AnyBulkWriteOperation,
  type ClientSession,
  type Collection,
  type Db,
  type Filter,
} from 'mongodb';
import type {
  CommitOutcome,
  DocWrite,
  DeltaQuery,
  KeysetQuery,
  ListPage,
  ListQuery,
  ReadStore,
  StoredDoc,
} from '../port.ts';
import { ReplayFencedError } from '../generations/port.ts';
import { storedFromTexts } from '../stored-doc.ts';
import { namedMongoError } from './mongodb-faults.ts';
import { createMongoHistory } from './mongodb-history.ts';
import { boundFilter, createMongoChunks, type ChunkDoc, type RowMove } from './mongodb-list-chunks.ts';

type MongoDoc = {
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

type CheckpointDoc = { _id: string; position: number };
type CounterDoc = { _id: string; collection: string; facet: string; n: number };

export const CHECKPOINTS = '_pulseboard_checkpoints';
const COUNTS = '_pulseboard_counts';
/** Listing chunks (mongodb-list-chunks.ts): where a board page by number starts, without a skip to it. */
const CHUNKS = '_pulseboard_chunks';
/** The pointer, the replay lock and who uses which generation (mongodb-generations.ts); no generation's data. */
export const GENERATIONS_COLLECTION = '_pulseboard_generations';
const GET_MANY_CHUNK = 1000;
const COLLECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,109}$/;
const GENERATION_SUFFIX = /_v([1-9]\d{0,8})$/;

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

function lookupEntry(key: string, value: string): string {
  return JSON.stringify([key, value]);
}

function jsonText(value: unknown, what: string, id: string): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`document ${id}: ${what} is not JSON`);
  return text;
}

function toMongo(write: DocWrite): MongoDoc {
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
const listingHint = (facets: readonly string[] | undefined) => (facets === undefined ? 'listing' : 'listing_facet');
/** The delta index matching a facet filter: `delta_facet` leads with the facet, so a filtered delta reads only its rows. */
const deltaHint = (facets: readonly string[] | undefined) => (facets === undefined ? 'delta' : 'delta_facet');

/** What listings fetch: never the projector-private state, nor the lookup array. */
const LISTED = { projection: { state: 0, lookup: 0 } } as const;

/** A fetched row as the port's stored document (parsed on first access; listing rows carry no state). */
function fromMongo<D, S>(row: Omit<MongoDoc, 'state' | 'lookup'> & { state?: string }): StoredDoc<D, S> {
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

const counterId = (collection: string, facet: string) => JSON.stringify([collection, facet]);

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

/** The listing's rows as the chunks read them (sort key, id and facet). */
const listedRows = (target: Collection<MongoDoc>) =>
  target as unknown as Collection<{ _id: string; sortKey: string; facet: string }>;

/** No facets given: every document; an empty list: none (as in the SQLite store). */
function facetFilter(facets: readonly string[] | undefined): Filter<MongoDoc> {
  return facets === undefined ? {} : { facet: { $in: [...facets] } };
}

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
    history,

    async checkpoint(collection) {
      const row = await committedCheckpoints.findOne({ _id: collection });
      return row?.position ?? 0;
    },

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
        if (options.fenced && !(await options.fenced(session))) throw new ReplayFencedError();
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

    async clear() {
      // Every collection of this generation (read models and checkpoints) is emptied, its indexes kept;
      // other generations and the generation pointer are left alone.
      const collections = await db.listCollections({}, { nameOnly: true }).toArray();
      for (const { name } of collections) {
        if (generationOfCollection(name) === generation) await db.collection(name).deleteMany({});
      }
      counted.clear();
      chunks.forget();
      history.forget();
    },

    async close() {
      await abortOpen();
      if (options.ownsClient) await client.close();
    },
  };
}
