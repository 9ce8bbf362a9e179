/**
 * The adapter-neutral arithmetic of listing chunks (readmodels/list-chunks.ts) and the MongoDB
 * adapter's chunk look-up order (readmodels/mongodb/mongodb-list-chunks.ts): where a page starts,
 * how a chunk is cut, and which chunk holds a key in the server's string order.
 */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import {
  CHUNK_ROWS_CUT,
  FIRST_CHUNK,
  pageFinder,
  pieceCutter,
  type ChunkStart,
  type PageStart,
  type Piece,
} from '../../readmodels/list-chunks.ts';
import { chunkFor, compareStarts } from '../../readmodels/mongodb/mongodb-list-chunks.ts';

const start = (key: string, id = '') => ({ key, id });

/** How many chunks the last `pageStart` fed before the finder answered. */
let fed = 0;

/** Feeds chunks until the finder answers, as a store reads them. */
function pageStart(chunks: readonly { start: ChunkStart; n: number }[], ascending: boolean, skip: number): PageStart {
  const finder = pageFinder(ascending, skip);
  fed = 0;
  for (const chunk of chunks) {
    fed += 1;
    const found = finder.feed(chunk.start, chunk.n);
    if (found) return found;
  }
  return finder.end();
}

it('a page starts at the edge of the chunk its offset falls in, counted from the end the walk starts at', () => {
  // Oldest first: FIRST (3 rows), b (4), c (5); newest first the same chunks reversed.
  const oldestFirst = [
    { start: FIRST_CHUNK, n: 3 },
    { start: start('b'), n: 4 },
    { start: start('c'), n: 5 },
  ];
  const newestFirst = [...oldestFirst].reverse();
  // From the newest end: offset 0-4 in c (no bound), 5-8 in b (below c), 9-11 in FIRST (below b).
  assert.deepEqual(pageStart(newestFirst, false, 0), { bound: null, skip: 0 });
  assert.deepEqual(pageStart(newestFirst, false, 4), { bound: null, skip: 4 });
  assert.equal(fed, 1, "no chunk is read past the page's");
  assert.deepEqual(pageStart(newestFirst, false, 5), { bound: start('c'), skip: 0 });
  assert.deepEqual(pageStart(newestFirst, false, 11), { bound: start('b'), skip: 2 });
  // From the oldest end: FIRST needs no bound, later chunks start at their own start.
  assert.deepEqual(pageStart(oldestFirst, true, 2), { bound: null, skip: 2 });
  assert.deepEqual(pageStart(oldestFirst, true, 3), { bound: start('b'), skip: 0 });
  assert.deepEqual(pageStart(oldestFirst, true, 10), { bound: start('c'), skip: 3 });
  // Chunks without a row of the listed facets are passed over; past every count, the plain walk.
  assert.deepEqual(
    pageStart(
      [
        { start: start('c'), n: 0 },
        { start: start('b'), n: 2 },
      ],
      false,
      1,
    ),
    { bound: start('c'), skip: 1 },
  );
  assert.deepEqual(pageStart(newestFirst, false, 12), { bound: null, skip: 12 });
});

it('a chunk is cut into pieces of at most CHUNK_ROWS_CUT rows, the first keeping its start, every row counted once by facet', () => {
  for (const rows of [1, CHUNK_ROWS_CUT, CHUNK_ROWS_CUT + 1, 4097, 20_000]) {
    const cutter = pieceCutter(start('a', 'x'), rows);
    const pieces: Piece[] = [];
    for (let i = 0; i < rows; i++) {
      const closed = cutter.add(`k${String(i).padStart(6, '0')}`, `id${i}`, i % 3 === 0 ? 'pending' : 'dossier');
      if (closed) pieces.push(closed);
    }
    pieces.push(cutter.end());
    assert.deepEqual(pieces[0]!.start, start('a', 'x'), `${rows}: the first piece keeps the chunk's start`);
    assert.equal(pieces.length, Math.ceil(rows / CHUNK_ROWS_CUT), `${rows}: as few pieces as the bound allows`);
    assert.ok(
      pieces.every((piece) => piece.total <= CHUNK_ROWS_CUT && piece.total > 0),
      `${rows}: ${pieces.map((piece) => piece.total).join(' ')}`,
    );
    assert.equal(
      pieces.reduce((sum, piece) => sum + piece.total, 0),
      rows,
    );
    assert.ok(pieces.every((piece) => [...piece.facets.values()].reduce((a, b) => a + b, 0) === piece.total));
    // Each later piece starts at its own first row.
    let at = 0;
    for (const piece of pieces) {
      if (at > 0) assert.deepEqual(piece.start, { key: `k${String(at).padStart(6, '0')}`, id: `id${at}` });
      at += piece.total;
    }
  }
});

it("the MongoDB adapter finds a key's chunk in the server's string order (UTF-8 bytes, not UTF-16 units)", () => {
  const starts = [FIRST_CHUNK, start('2026-01-01', 'p1'), start('2026-01-01', 'p5'), start('2026-06-01', 'a')];
  assert.deepEqual(chunkFor(starts, start('2025-12-31', 'z')), FIRST_CHUNK);
  assert.deepEqual(
    chunkFor(starts, start('2026-01-01', 'p1')),
    start('2026-01-01', 'p1'),
    'a chunk holds its own start',
  );
  assert.deepEqual(chunkFor(starts, start('2026-01-01', 'p4')), start('2026-01-01', 'p1'));
  assert.deepEqual(chunkFor(starts, start('2027-01-01', '')), start('2026-06-01', 'a'));
  assert.deepEqual(chunkFor([], start('x')), FIRST_CHUNK, 'a collection without chunks yet: the first');
  // U+FF5E sorts below U+1F600 in UTF-8 and in code points, above it in UTF-16 code units.
  const texts = ['a', 'b', '\uff5e', '\u{1f600}', 'ab', '', '\ue000', '\ud7ff'];
  const byServer = [...texts].sort((x, y) => Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8')));
  assert.deepEqual(
    [...texts].sort((x, y) => compareStarts(start(x), start(y))),
    byServer,
  );
});
