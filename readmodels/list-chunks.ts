/**
 * Positions in a listing without walking it, the same way in every read store. A board page by
 * number needs the row at an offset of the listing (sortKey DESC, id DESC); an index walk to it costs
 * the offset (bench/reads.bench.ts prints that walk beside the chunked read). So each collection's
 * listing order is cut into chunks of consecutive rows, each known by its first (lowest)
 * (sortKey, id) and holding its row count per facet. A page at offset o sums chunk counts from the
 * nearer end until o falls inside one chunk, then skips at most one chunk's rows of the listing index
 * from that chunk's edge: a read costs the number of chunks (one small row each, ~250 at 1M
 * documents) and one chunk, never the offset.
 *
 * A store keeps the counts in the transaction that writes the documents (an insert counts in its
 * chunk, a change of sort key or facet moves its count), and a commit that leaves a chunk over
 * CHUNK_ROWS_MAX cuts it again into chunks of at most CHUNK_ROWS_CUT. Every collection starts with one
 * chunk starting at FIRST_CHUNK, before any key, so every row has a chunk. Documents are never deleted
 * one by one (only `clear`, which empties the chunks too).
 */
export const CHUNK_ROWS_MAX = 4096;
export const CHUNK_ROWS_CUT = 2048;
/**
 * Offsets up to this are walked in the listing index from its end without a look at the chunks: such
 * a walk costs no more than the look-up (page 1 and the last page are read most).
 */
const WALKED_WITHOUT_CHUNKS = CHUNK_ROWS_CUT;

/** Whether a page `skip` rows from an end of the listing is located through the chunks (else: walked from that end). */
export const consultsChunks = (skip: number): boolean => skip > WALKED_WITHOUT_CHUNKS;

export type ChunkStart = { key: string; id: string };
export const FIRST_CHUNK: ChunkStart = { key: '', id: '' };

/** A chunk as cut: where it starts, its rows, and its rows per facet. */
export type Piece = { start: ChunkStart; total: number; facets: Map<string, number> };

/**
 * Where a page starts: `bound` is the edge of the chunk the offset falls in (for a page read from
 * the newest end, the start of the chunk above it, exclusive; from the oldest end, the chunk's own
 * start, inclusive), null when the page needs no bound (the outermost chunk, or an offset walked
 * without chunks); `skip` is how many listed rows lie between that edge and the page.
 */
export type PageStart = { bound: ChunkStart | null; skip: number };

/**
 * Finds the start of the page `skip` rows from the newest end (chunks fed newest first) or from the
 * oldest (`ascending`, chunks fed oldest first); `n` is each chunk's rows in the listed facets. `feed`
 * answers once the page's chunk is fed (a store stops reading chunks there); `end` answers when every
 * chunk was fed without reaching it (the counters say otherwise): the plain walk from the end is still right.
 */
export function pageFinder(
  ascending: boolean,
  skip: number,
): { feed(start: ChunkStart, n: number): PageStart | null; end(): PageStart } {
  let before = 0;
  let edge: ChunkStart | null = null;
  return {
    feed(start, n) {
      if (before + n > skip) {
        const bound = ascending ? (start.key === FIRST_CHUNK.key && start.id === FIRST_CHUNK.id ? null : start) : edge;
        return { bound, skip: skip - before };
      }
      before += n;
      edge = start;
      return null;
    },
    end: () => ({ bound: null, skip }),
  };
}

/**
 * Cuts the rows of one chunk, fed in listing order oldest first, into pieces of at most
 * CHUNK_ROWS_CUT (`total` is what the chunk's count says; each piece counts the rows it was fed).
 * The first piece keeps the chunk's `start`, so rows before its first row that come later still
 * fall in it.
 */
export function pieceCutter(
  start: ChunkStart,
  total: number,
): { add(key: string, id: string, facet: string): Piece | null; end(): Piece } {
  const size = Math.ceil(Math.max(1, total) / Math.max(1, Math.ceil(total / CHUNK_ROWS_CUT)));
  let piece: Piece = { start, total: 0, facets: new Map() };
  return {
    add(key, id, facet) {
      let closed: Piece | null = null;
      if (piece.total === size) {
        closed = piece;
        piece = { start: { key, id }, total: 0, facets: new Map() };
      }
      piece.total += 1;
      piece.facets.set(facet, (piece.facets.get(facet) ?? 0) + 1);
      return closed;
    },
    end: () => piece,
  };
}

/** How a batch's moves change the per-facet counts (a move within its facet changes none); every store's commit. */
export function facetDeltas(
  moves: readonly { from?: { facet: string } | null; to: { facet: string } }[],
): Map<string, number> {
  const deltas = new Map<string, number>();
  const add = (facet: string, by: number) => deltas.set(facet, (deltas.get(facet) ?? 0) + by);
  for (const { from, to } of moves) {
    if (from?.facet === to.facet) continue;
    if (from) add(from.facet, -1);
    add(to.facet, 1);
  }
  for (const [facet, by] of deltas) if (by === 0) deltas.delete(facet);
  return deltas;
}
