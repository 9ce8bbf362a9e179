/**
 * The MongoDB store's listing chunks (readmodels/list-chunks.ts): one document per chunk in
 * `_pulseboard_chunks` (`…_v<N>`), {collection, startKey, startId, total, facets: {<facet>: n}},
 * kept by each commit in its transaction from the rows whose sort key or facet it changed (one `$inc`
 * per chunk touched), and cut again by the same commit when one passes CHUNK_ROWS_MAX.
 *
 * A collection written before the chunks existed is cut once, at upgrade, in bounded steps outside any
 * transaction (ensureChunked): a walk of a large listing takes longer than MongoDB's 60 s transaction
 * limit, and a transaction past it restarts for ever. Nothing else writes the listing meanwhile: every
 * commit (and every page read) of this version waits for the first chunk, which the cut writes last.
 */
import type { ClientSession, Collection, Filter } from 'mongodb';
import {
  CHUNK_ROWS_CUT,
  CHUNK_ROWS_MAX,
  consultsChunks,
  FIRST_CHUNK,
  pageFinder,
  pieceCutter,
  type ChunkStart,
  type PageStart,
  type Piece,
} from '../list-chunks.ts';

export type ChunkDoc = {
  _id: string;
  collection: string;
  startKey: string;
  startId: string;
  total: number;
  facets: Record<string, number>;
};

/** The rows of a listing as the chunks read them (the store's documents have more). */
type ListedRow = { _id: string; sortKey: string; facet: string };

/** A row's place before and after a commit that moved it (`from` undefined: a new document). */
export type RowMove = {
  from?: { key: string; id: string; facet: string };
  to: { key: string; id: string; facet: string };
};

const chunkId = (collection: string, start: ChunkStart) => JSON.stringify([collection, start.key, start.id]);

/** Chunks per step of an upgrade-time cut: a step reads 8 × 2,048 rows and writes them in a short transaction. */
export const CUT_STEP_CHUNKS = 8;
/** The index of the chunks' order (and of the listing's own order, in every read-model collection). */
const CHUNK_ORDER = 'chunk_order';
const LISTING = 'listing';

/** A facet as a field name: facets are the projectors' words, but a `.` or `$` in one must not become a path. */
const facetField = (facet: string) => `f${Buffer.from(facet, 'utf8').toString('hex')}`;

/** String order as the server compares strings (UTF-8 bytes, i.e. code points), from UTF-16 code units. */
function codePointOrder(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (D800–DFFF) stand for code points above every BMP unit from E000 up.
    const fix = (c: number) => (c >= 0xe000 ? c - 0x800 : c >= 0xd800 ? c + 0x2000 : c);
    return fix(x) - fix(y);
  }
  return a.length - b.length;
}

export function compareStarts(a: ChunkStart, b: ChunkStart): number {
  return codePointOrder(a.key, b.key) || codePointOrder(a.id, b.id);
}

/** The chunk holding (key, id): the greatest start at or before it, in starts sorted ascending. */
export function chunkFor(starts: readonly ChunkStart[], at: ChunkStart): ChunkStart {
  let low = 0;
  let high = starts.length - 1;
  let found = FIRST_CHUNK;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (compareStarts(starts[middle]!, at) <= 0) {
      found = starts[middle]!;
      low = middle + 1;
    } else high = middle - 1;
  }
  return found;
}

/** Rows from `from` (inclusive) up to `to` (exclusive; none: to the end), on the listing index. */
function rowsBetween(from: ChunkStart, to: ChunkStart | null): Filter<ListedRow> {
  const lower: Filter<ListedRow> = {
    $or: [{ sortKey: { $gt: from.key } }, { sortKey: from.key, _id: { $gte: from.id } }],
  };
  if (to === null) return { sortKey: { $gte: from.key }, ...lower };
  const upper: Filter<ListedRow> = { $or: [{ sortKey: { $lt: to.key } }, { sortKey: to.key, _id: { $lt: to.id } }] };
  return { sortKey: { $gte: from.key, $lte: to.key }, $and: [lower, upper] };
}

/** The page's bound as a filter: below a chunk start (newest first), or from one up (oldest first). */
export function boundFilter(bound: ChunkStart, ascending: boolean): Filter<ListedRow> {
  return ascending
    ? { sortKey: { $gte: bound.key }, $or: [{ sortKey: { $gt: bound.key } }, { _id: { $gte: bound.id } }] }
    : { sortKey: { $lte: bound.key }, $or: [{ sortKey: { $lt: bound.key } }, { _id: { $lt: bound.id } }] };
}

/** A chunk starting at `start` holding `rows`. */
function pieceOf(start: ChunkStart, rows: readonly ListedRow[]): Piece {
  const facets = new Map<string, number>();
  for (const row of rows) facets.set(row.facet, (facets.get(row.facet) ?? 0) + 1);
  return { start, total: rows.length, facets };
}

export type MongoChunks = {
  ensureIndex(): Promise<void>;
  /** Cuts a collection written before the chunks existed into chunks, once per process (in resumable steps). */
  ensureChunked(
    collection: string,
    rows: Collection<ListedRow>,
    inTransaction: (work: (session: ClientSession) => Promise<void>) => Promise<void>,
  ): Promise<void>;
  /** Counts a commit's moved rows in their chunks and cuts any chunk that passes its bound (inside the commit's transaction, after its documents are written). */
  apply(
    collection: string,
    moves: readonly RowMove[],
    rows: Collection<ListedRow>,
    session: ClientSession,
  ): Promise<void>;
  /** Where a page starts, read in `session` (the snapshot of the page's other reads). */
  locate(
    collection: string,
    facets: readonly string[] | undefined,
    ascending: boolean,
    skip: number,
    session: ClientSession,
  ): Promise<PageStart>;
  /** Forgets which collections were found chunked (after `clear`). */
  forget(): void;
};

export function createMongoChunks(chunks: Collection<ChunkDoc>): MongoChunks {
  const chunked = new Map<string, Promise<void>>();

  async function startsOf(collection: string, session: ClientSession): Promise<ChunkStart[]> {
    const docs = await chunks
      .find({ collection }, { projection: { startKey: 1, startId: 1 }, hint: CHUNK_ORDER, session })
      .sort({ startKey: 1, startId: 1 })
      .toArray();
    return docs.map((doc) => ({ key: doc.startKey, id: doc.startId }));
  }

  const pieceDoc = (collection: string, piece: Piece): ChunkDoc => ({
    _id: chunkId(collection, piece.start),
    collection,
    startKey: piece.start.key,
    startId: piece.start.id,
    total: piece.total,
    facets: Object.fromEntries([...piece.facets].map(([facet, n]) => [facetField(facet), n])),
  });

  /** Replaces the chunk starting at `start` (up to `next`) by the pieces of its rows. */
  async function cut(
    collection: string,
    start: ChunkStart,
    next: ChunkStart | null,
    total: number,
    rows: Collection<ListedRow>,
    session: ClientSession,
  ): Promise<void> {
    const cutter = pieceCutter(start, total);
    const pieces: ChunkDoc[] = [];
    const cursor = rows
      .find(rowsBetween(start, next), { projection: { sortKey: 1, facet: 1 }, hint: LISTING, session })
      .sort({ sortKey: 1, _id: 1 });
    for await (const row of cursor) {
      const closed = cutter.add(row.sortKey, row._id, row.facet);
      if (closed) pieces.push(pieceDoc(collection, closed));
    }
    pieces.push(pieceDoc(collection, cutter.end()));
    await chunks.deleteOne({ _id: chunkId(collection, start) }, { session });
    await chunks.insertMany(pieces, { session });
  }

  /**
   * Cuts a whole listing into chunks of CHUNK_ROWS_CUT rows, oldest first, CUT_STEP_CHUNKS per step: the
   * rows of a step are read outside any transaction, and its chunks written in a short one that first
   * checks the first chunk is still absent (another process may have finished the cut and committed
   * since). A cut that stops half way resumes from its last chunk written. The first chunk, even empty,
   * marks the collection as chunked, so it is written last, from the rows before the second chunk.
   */
  async function cutWhole(
    collection: string,
    rows: Collection<ListedRow>,
    inTransaction: (work: (session: ClientSession) => Promise<void>) => Promise<void>,
  ): Promise<void> {
    const first = chunkId(collection, FIRST_CHUNK);
    if (await chunks.findOne({ _id: first }, { projection: { _id: 1 } })) return;
    const absent = async (session: ClientSession) =>
      (await chunks.findOne({ _id: first }, { projection: { _id: 1 }, session })) === null;
    const [resume] = await chunks
      .find({ collection }, { projection: { startKey: 1, startId: 1 }, hint: CHUNK_ORDER })
      .sort({ startKey: -1, startId: -1 })
      .limit(1)
      .toArray();
    let from: ChunkStart = resume ? { key: resume.startKey, id: resume.startId } : FIRST_CHUNK;
    const stepRows = CUT_STEP_CHUNKS * CHUNK_ROWS_CUT;
    for (;;) {
      const read = await rows
        .find(rowsBetween(from, null), { projection: { sortKey: 1, facet: 1 }, hint: LISTING })
        .sort({ sortKey: 1, _id: 1 })
        .limit(stepRows + 1)
        .toArray();
      const pieces: ChunkDoc[] = [];
      for (let i = 0; i < Math.min(read.length, stepRows); i += CHUNK_ROWS_CUT) {
        const start = i === 0 ? from : { key: read[i]!.sortKey, id: read[i]!._id };
        // The first chunk is written last (it marks the cut as done).
        if (start === FIRST_CHUNK) continue;
        pieces.push(pieceDoc(collection, pieceOf(start, read.slice(i, Math.min(i + CHUNK_ROWS_CUT, stepRows)))));
      }
      if (pieces.length > 0) {
        await inTransaction(async (session) => {
          if (!(await absent(session))) return;
          await chunks.bulkWrite(
            pieces.map((piece) => ({ replaceOne: { filter: { _id: piece._id }, replacement: piece, upsert: true } })),
            { ordered: false, session },
          );
        });
      }
      if (read.length <= stepRows) break;
      from = { key: read[stepRows]!.sortKey, id: read[stepRows]!._id };
    }
    const [second] = await chunks
      .find({ collection }, { projection: { startKey: 1, startId: 1 }, hint: CHUNK_ORDER })
      .sort({ startKey: 1, startId: 1 })
      .limit(1)
      .toArray();
    const head = await rows
      .find(rowsBetween(FIRST_CHUNK, second ? { key: second.startKey, id: second.startId } : null), {
        projection: { sortKey: 1, facet: 1 },
        hint: LISTING,
      })
      .toArray();
    const firstDoc = pieceDoc(collection, pieceOf(FIRST_CHUNK, head));
    await inTransaction(async (session) => {
      if (await absent(session)) await chunks.insertMany([firstDoc], { session });
    });
  }

  return {
    async ensureIndex() {
      await chunks.createIndex({ collection: 1, startKey: 1, startId: 1 }, { name: CHUNK_ORDER, unique: true });
    },

    async ensureChunked(collection, rows, inTransaction) {
      let pending = chunked.get(collection);
      if (!pending) {
        pending = cutWhole(collection, rows, inTransaction);
        chunked.set(collection, pending);
        pending.catch(() => chunked.delete(collection));
      }
      await pending;
    },

    async apply(collection, moves, rows, session) {
      if (moves.length === 0) return;
      const starts = await startsOf(collection, session);
      const deltas = new Map<string, { start: ChunkStart; total: number; facets: Map<string, number> }>();
      const add = (at: { key: string; id: string; facet: string }, by: number) => {
        const start = chunkFor(starts, at);
        const id = chunkId(collection, start);
        const delta = deltas.get(id) ?? { start, total: 0, facets: new Map<string, number>() };
        delta.total += by;
        delta.facets.set(at.facet, (delta.facets.get(at.facet) ?? 0) + by);
        deltas.set(id, delta);
      };
      for (const move of moves) {
        if (move.from) add(move.from, -1);
        add(move.to, 1);
      }
      await chunks.bulkWrite(
        [...deltas].map(([id, delta]) => ({
          updateOne: {
            filter: { _id: id },
            update: {
              $inc: {
                total: delta.total,
                ...Object.fromEntries([...delta.facets].map(([facet, by]) => [`facets.${facetField(facet)}`, by])),
              },
              $setOnInsert: { collection, startKey: delta.start.key, startId: delta.start.id },
            },
            upsert: true,
          },
        })),
        { ordered: false, session },
      );
      const grown = [...deltas].filter(([, delta]) => delta.total > 0).map(([id]) => id);
      const full = await chunks
        .find(
          { _id: { $in: grown }, total: { $gt: CHUNK_ROWS_MAX } },
          { projection: { startKey: 1, startId: 1, total: 1 }, session },
        )
        .toArray();
      for (const chunk of full) {
        const start = { key: chunk.startKey, id: chunk.startId };
        const after = starts.findIndex((s) => compareStarts(s, start) > 0);
        await cut(collection, start, after === -1 ? null : starts[after]!, chunk.total, rows, session);
      }
    },

    async locate(collection, facets, ascending, skip, session) {
      if (!consultsChunks(skip)) return { bound: null, skip };
      const direction = ascending ? 1 : -1;
      const fields = facets?.map(facetField);
      const finder = pageFinder(ascending, skip);
      // Read up to the page's chunk only (leaving the loop closes the cursor).
      const cursor = chunks
        .find(
          { collection },
          {
            projection: { startKey: 1, startId: 1, total: 1, facets: 1 },
            hint: CHUNK_ORDER,
            session,
          },
        )
        .sort({ startKey: direction, startId: direction });
      for await (const doc of cursor) {
        const n = fields === undefined ? doc.total : fields.reduce((sum, field) => sum + (doc.facets[field] ?? 0), 0);
        const found = finder.feed({ key: doc.startKey, id: doc.startId }, n);
        if (found) return found;
      }
      return finder.end();
    },

    forget: () => chunked.clear(),
  };
}
