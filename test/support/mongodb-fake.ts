/**
 * An in-memory stand-in for the part of the `mongodb` driver's MongoClient the read store uses
 * (readmodels/mongodb/), counting server calls as `collection.method`. Snapshot sessions, majority
 * reads that lag, transactions that fail past a row budget (as a server's past its 60 s limit), the
 * queries sent with their hints, and hooks to run between reads or before writes.
 */
import type { MongoClient } from 'mongodb';

export type Row = Record<string, unknown> & { _id: string };
type Filter = Record<string, unknown>;

/** String order as the server has it (UTF-8 bytes); the tests' strings are ASCII, where it is JS order. */
export const order = (a: unknown, b: unknown) => (a === b ? 0 : (a as string) < (b as string) ? -1 : 1);

function matchesCondition(value: unknown, condition: unknown): boolean {
  // An array field matches a value it holds, as on the server.
  if (Array.isArray(value) && (typeof condition !== 'object' || condition === null)) return value.includes(condition);
  if (typeof condition !== 'object' || condition === null) return value === condition;
  return Object.entries(condition).every(([operator, operand]) => {
    if (operator === '$in') return (operand as unknown[]).includes(value);
    if (value === undefined) return false;
    if (operator === '$gt') return order(value, operand) > 0;
    if (operator === '$gte') return order(value, operand) >= 0;
    if (operator === '$lt') return order(value, operand) < 0;
    if (operator === '$lte') return order(value, operand) <= 0;
    throw new Error(`the stand-in has no ${operator}`);
  });
}

function matches(row: Row | undefined, filter: Filter): boolean {
  if (!row) return false;
  return Object.entries(filter).every(([field, condition]) => {
    if (field === '$or') return (condition as Filter[]).some((part) => matches(row, part));
    if (field === '$and') return (condition as Filter[]).every((part) => matches(row, part));
    return matchesCondition(row[field], condition);
  });
}

function project(row: Row, projection: Record<string, 0 | 1> | undefined): Row {
  if (!projection || Object.keys(projection).length === 0) return { ...row };
  const include = Object.entries(projection)
    .filter(([field, on]) => on === 1 && field !== '_id')
    .map(([field]) => field);
  // An inclusion keeps `_id` unless it is excluded (`_id: 0`), as on the server.
  if (include.length > 0)
    return Object.fromEntries([
      ...(projection._id === 0 ? [] : [['_id', row._id]]),
      ...include.filter((field) => field in row).map((field) => [field, row[field]]),
    ]) as Row;
  return Object.fromEntries(Object.entries(row).filter(([field]) => projection[field] !== 0)) as Row;
}

function applyUpdate(row: Row | undefined, id: string, update: Record<string, Record<string, unknown>>): Row {
  const next: Row = row ? { ...row } : { _id: id };
  if (!row) Object.assign(next, update.$setOnInsert ?? {});
  Object.assign(next, update.$set ?? {});
  for (const [path, by] of Object.entries(update.$inc ?? {})) {
    // A dotted path: one level of nesting (chunk facets).
    const [field, inner] = path.split('.') as [string, string | undefined];
    if (inner === undefined) next[field] = ((next[field] as number | undefined) ?? 0) + (by as number);
    else {
      const nested = { ...((next[field] as Record<string, number> | undefined) ?? {}) };
      nested[inner] = (nested[inner] ?? 0) + (by as number);
      next[field] = nested;
    }
  }
  return next;
}

/** A session of the stand-in: a snapshot one reads every table as it was at its first read (as a server's snapshot session reads at one cluster time). */
type FakeSession = {
  snapshot: boolean;
  view?: Map<string, Map<string, Row>>;
  inTransaction?: boolean;
  transactionRows?: number;
};
type ReadOptions = { projection?: Record<string, 0 | 1>; session?: FakeSession; hint?: string };
/** A query as the store sent it: what the index hint is checked against. */
export type SentFind = {
  collection: string;
  filter: Filter;
  sort: [string, number][];
  hint: string | undefined;
  skip: number;
  /** 0: none. */
  limit: number;
};

/** Just enough of MongoClient for the read store (its history included); every call counted as `collection.method`. */
export function fakeMongo() {
  const data = new Map<string, Map<string, Row>>();
  /** Runs after each read that returns documents (findOne, a find's first batch): a test's way to commit between two reads. */
  const hooks: { afterRead?: () => Promise<void>; beforeBulkWrite?: (collection: string) => void | Promise<void> } = {};
  /** What happened to explicit sessions: 'abortTransaction' (of one in a transaction), 'endSession'. */
  const sessionLog: string[] = [];
  /**
   * Rows a transaction may read before it fails as a server's transaction past its 60 s limit does
   * (every attempt, as a restart reads the same rows again); unlimited unless a test sets it.
   */
  const limits = { transactionRows: Number.POSITIVE_INFINITY, rowsRead: 0 };
  const finds: SentFind[] = [];
  /**
   * Index names created per collection. A hint naming none of a collection's indexes fails, as on the
   * server; a collection whose indexes no call created (rows a test planted) accepts any hint.
   */
  const indexes = new Map<string, Set<string>>();
  const declare = (collection: string, name: string) => {
    const names = indexes.get(collection) ?? new Set(['_id_']);
    names.add(name);
    indexes.set(collection, names);
  };
  const checkHint = (collection: string, hint: string | undefined) => {
    const names = indexes.get(collection);
    if (hint === undefined || !names || names.has(hint)) return;
    throw Object.assign(new Error(`hint provided does not correspond to an existing index (${collection}: ${hint})`), {
      code: 2,
    });
  };
  const readInTransaction = (session: FakeSession | undefined, n: number) => {
    limits.rowsRead += n;
    if (!session?.inTransaction) return;
    session.transactionRows = (session.transactionRows ?? 0) + n;
    if (session.transactionRows > limits.transactionRows) {
      throw Object.assign(new Error('Transaction exceeded the transactionLifetimeLimitSeconds (injected)'), {
        errorLabels: ['TransientTransactionError'],
      });
    }
  };
  /**
   * What majority reads and snapshot sessions see: every write at once (null), or, between `lag()`
   * and `catchUp()`, the data as it was at `lag()` (commits applied on the primary that too few
   * members have yet; 'local' reads see them).
   */
  let majority: Map<string, Map<string, Row>> | null = null;
  const copyOf = (tables: Map<string, Map<string, Row>>) =>
    new Map([...tables].map(([table, tableRows]) => [table, new Map(tableRows)]));
  const calls: string[] = [];
  const bulkOptions: { collection: string; ordered: unknown; operations: number }[] = [];
  const table = (name: string) => {
    let rows = data.get(name);
    if (!rows) data.set(name, (rows = new Map()));
    return rows;
  };
  const collection = (name: string, handle: { readConcern?: { level: string } } = {}) => {
    const rows = table(name);
    const call = (method: string) => calls.push(`${name}.${method}`);
    const rowsSeenBy = (session: FakeSession | undefined): Map<string, Row> => {
      if (session?.snapshot) {
        session.view ??= copyOf(majority ?? data);
        return session.view.get(name) ?? new Map();
      }
      if (handle.readConcern?.level === 'majority' && majority) return majority.get(name) ?? new Map();
      return rows;
    };
    const findAll = (filter: Filter, session?: FakeSession) =>
      [...rowsSeenBy(session).values()].filter((row) => matches(row, filter));
    return {
      async createIndexes(specs: { name: string }[]) {
        call('createIndexes');
        for (const spec of specs) declare(name, spec.name);
        return specs.map((spec) => spec.name);
      },
      async findOne(filter: Filter, options: ReadOptions = {}) {
        call('findOne');
        const row = findAll(filter, options.session)[0];
        await hooks.afterRead?.();
        return row ? project(row, options.projection) : null;
      },
      find(filter: Filter, options: ReadOptions = {}) {
        let sort: [string, number][] = [];
        let skip = 0;
        let limit = 0;
        const results = () => {
          checkHint(name, options.hint);
          const found = findAll(filter, options.session);
          finds.push({ collection: name, filter, sort, hint: options.hint, skip, limit });
          readInTransaction(options.session, found.length);
          if (sort.length > 0) {
            found.sort((a, b) => {
              for (const [field, direction] of sort) {
                const by = order(a[field], b[field]) * direction;
                if (by !== 0) return by;
              }
              return 0;
            });
          }
          return found.slice(skip, limit > 0 ? skip + limit : undefined).map((row) => project(row, options.projection));
        };
        const cursor = {
          sort(spec: Record<string, number>) {
            sort = Object.entries(spec);
            return cursor;
          },
          skip(n: number) {
            skip = n;
            return cursor;
          },
          limit(n: number) {
            limit = n;
            return cursor;
          },
          async next() {
            call('find');
            const [found] = results();
            await hooks.afterRead?.();
            return found ?? null;
          },
          async toArray() {
            call('find');
            const found = results();
            await hooks.afterRead?.();
            return found;
          },
          async *[Symbol.asyncIterator]() {
            call('find');
            const found = results();
            await hooks.afterRead?.();
            yield* found;
          },
        };
        return cursor;
      },
      async countDocuments(filter: Filter, options: ReadOptions = {}) {
        call('countDocuments');
        const n = findAll(filter).length;
        readInTransaction(options.session, n);
        return n;
      },
      async dropIndex(index: string) {
        call('dropIndex');
        // As on the server: a name no index has fails with IndexNotFound (code 27).
        if (!indexes.get(name)?.delete(index))
          throw Object.assign(new Error(`index not found with name [${index}]`), { code: 27 });
        return { ok: 1 };
      },
      async createIndex(_key: unknown, options: { name?: string } = {}) {
        call('createIndex');
        if (options.name) declare(name, options.name);
        return options.name ?? 'index';
      },
      async deleteMany(filter: Filter) {
        call('deleteMany');
        const found = findAll(filter);
        for (const row of found) rows.delete(row._id);
        return { deletedCount: found.length };
      },
      async deleteOne(filter: Filter) {
        call('deleteOne');
        const row = findAll(filter)[0];
        if (row) rows.delete(row._id);
        return { deletedCount: row ? 1 : 0 };
      },
      async insertMany(docs: Row[]) {
        call('insertMany');
        for (const doc of docs) {
          if (rows.has(doc._id)) throw new Error(`duplicate key ${doc._id}`);
          rows.set(doc._id, { ...doc });
        }
        return { insertedCount: docs.length };
      },
      aggregate(_pipeline: unknown, options: ReadOptions = {}) {
        return {
          async toArray() {
            call('aggregate');
            readInTransaction(options.session, rows.size);
            const groups = new Map<string, number>();
            for (const row of rows.values())
              groups.set(row.facet as string, (groups.get(row.facet as string) ?? 0) + 1);
            return [...groups].map(([facet, n]) => ({ _id: facet, n }));
          },
        };
      },
      async updateOne(
        filter: Filter,
        update: Record<string, Record<string, unknown>>,
        options: { upsert?: boolean } = {},
      ) {
        call('updateOne');
        const id = filter._id as string;
        const row = rows.get(id);
        if (matches(row, filter)) {
          rows.set(id, applyUpdate(row, id, update));
          return { matchedCount: 1, upsertedCount: 0 };
        }
        if (options.upsert && !row) {
          rows.set(id, applyUpdate(undefined, id, update));
          return { matchedCount: 0, upsertedCount: 1 };
        }
        return { matchedCount: 0, upsertedCount: 0 };
      },
      async bulkWrite(
        operations: Record<
          string,
          { filter: Filter; replacement?: Row; update?: Record<string, Record<string, unknown>>; document?: Row }
        >[],
        options: { ordered?: boolean },
      ) {
        call('bulkWrite');
        await hooks.beforeBulkWrite?.(name);
        bulkOptions.push({ collection: name, ordered: options.ordered, operations: operations.length });
        for (const operation of operations) {
          const [kind, spec] = Object.entries(operation)[0]!;
          if (kind === 'insertOne') {
            // A duplicate key fails the bulk write (and, on the server, the transaction it is in).
            if (rows.has(spec.document!._id)) throw new Error(`E11000 duplicate key ${spec.document!._id}`);
            rows.set(spec.document!._id, { ...spec.document! });
            continue;
          }
          const id = spec.filter._id as string;
          if (kind === 'replaceOne') rows.set(id, { ...spec.replacement!, _id: id });
          else rows.set(id, applyUpdate(rows.get(id), id, spec.update!));
        }
        return {};
      },
    };
  };
  const client = {
    db: () => ({
      collection,
      listCollections() {
        return {
          async toArray() {
            calls.push('db.listCollections');
            // A collection exists once written or indexed (a read of a missing one creates nothing).
            return [...data].filter(([name, rows]) => rows.size > 0 || indexes.has(name)).map(([name]) => ({ name }));
          },
        };
      },
      admin: () => ({
        async command() {
          calls.push('admin.hello');
          return { setName: 'rs0' };
        },
      }),
    }),
    startSession(options: { snapshot?: boolean } = {}) {
      const session = {
        snapshot: options.snapshot === true,
        inTransaction: false,
        transactionRows: 0,
        async withTransaction(work: () => Promise<void>) {
          calls.push('startTransaction');
          session.inTransaction = true;
          session.transactionRows = 0;
          try {
            await work();
          } finally {
            session.inTransaction = false;
          }
          calls.push('commitTransaction');
        },
        async abortTransaction() {
          if (!session.inTransaction) throw new Error('No transaction started');
          session.inTransaction = false;
          sessionLog.push('abortTransaction');
        },
        async endSession() {
          sessionLog.push('endSession');
        },
      };
      return session;
    },
  };
  return {
    client: client as unknown as MongoClient,
    calls,
    bulkOptions,
    data,
    hooks,
    limits,
    finds,
    sessionLog,
    lag: () => void (majority = copyOf(data)),
    catchUp: () => void (majority = null),
  };
}
