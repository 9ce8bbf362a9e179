/**
 * The SQLite store's listing chunks (readmodels/list-chunks.ts, readmodels/sqlite/list-chunks.ts): after any commit every chunk
 * is within its bound and the chunks' counts add up to the store's counters per facet, so a board
 * page's walk is bounded by one chunk; a store written before the chunks existed gets them on open.
 * (That every page is the listing's slice at any depth is the read-store contract's business.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, it } from 'vitest';
import type { DocWrite } from '../../readmodels/port.ts';
import { CHUNK_ROWS_MAX } from '../../readmodels/list-chunks.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pulseboard-chunks-'));
  path = join(dir, 'readmodels.sqlite');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const FACETS = ['dossier', 'no_dossier', 'pending'];

function writes(from: number, count: number, keyOf: (i: number) => string): DocWrite[] {
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return {
      id: `p${String(i).padStart(6, '0')}`,
      doc: { i },
      state: {},
      seq: i + 1,
      writtenAt: '2026-11-01T00:00:00.000Z',
      sortKey: keyOf(i),
      facet: FACETS[i % 3]!,
      keys: {},
    };
  });
}

/** Chunk sizes and per-facet sums as stored, beside the store's counters. */
function chunkState(collection: string): {
  chunks: number;
  largest: number;
  byFacet: Record<string, number>;
  counted: Record<string, number>;
} {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const sizes = db
      .prepare(
        'SELECT COUNT(*) AS chunks, MAX(total) AS largest, SUM(total) AS rows FROM list_chunks WHERE collection = ?',
      )
      .get(collection) as {
      chunks: number;
      largest: number;
      rows: number;
    };
    const byFacet = Object.fromEntries(
      (
        db
          .prepare('SELECT facet, SUM(n) AS n FROM list_chunk_facets WHERE collection = ? GROUP BY facet')
          .all(collection) as { facet: string; n: number }[]
      ).map((r) => [r.facet, r.n]),
    );
    const counted = Object.fromEntries(
      (
        db.prepare('SELECT facet, n FROM doc_counts WHERE collection = ?').all(collection) as {
          facet: string;
          n: number;
        }[]
      ).map((r) => [r.facet, r.n]),
    );
    assert.equal(
      sizes.rows,
      Object.values(counted).reduce((a, b) => a + b, 0),
      'chunk totals add up to the documents',
    );
    return { chunks: sizes.chunks, largest: sizes.largest, byFacet, counted };
  } finally {
    db.close();
  }
}

it('commits that grow one chunk far past its bound leave every chunk within it, counts exact per facet', async () => {
  const store = createSqliteReadStore(path);
  try {
    // One commit of 20,000 rows, then 9,000 rows inside one narrow stretch of keys, then keys and facets moved.
    await store.commit(
      'projects',
      writes(0, 20_000, (i) => `k${String(i % 5000).padStart(5, '0')}`),
      1,
    );
    let state = chunkState('projects');
    assert.ok(state.chunks >= 20_000 / CHUNK_ROWS_MAX, `${state.chunks} chunks`);
    assert.ok(state.largest <= CHUNK_ROWS_MAX, `largest chunk ${state.largest}`);
    assert.deepEqual(state.byFacet, state.counted);

    await store.commit(
      'projects',
      writes(20_000, 9000, (i) => `k02500-${i}`),
      2,
    );
    const moved = writes(0, 3000, (i) => `k${String(4999 - (i % 50)).padStart(5, '0')}`).map((w, i) => ({
      ...w,
      facet: FACETS[(i + 1) % 3]!,
      seq: 30_000 + i,
    }));
    await store.commit('projects', moved, 3);
    state = chunkState('projects');
    assert.ok(state.largest <= CHUNK_ROWS_MAX, `largest chunk ${state.largest}`);
    assert.deepEqual(state.byFacet, state.counted);
  } finally {
    await store.close();
  }
});

it('a store written before the chunks existed gets them on open, and its pages stay the listing', async () => {
  const store = createSqliteReadStore(path);
  await store.commit(
    'projects',
    writes(0, 10_000, (i) => `k${String(i % 777).padStart(4, '0')}`),
    1,
  );
  const before = await Promise.all(
    [0, 2500, 5000, 9950].map((offset) =>
      store.list('projects', { facets: ['dossier', 'no_dossier'], offset, limit: 50 }),
    ),
  );
  await store.close();

  const earlier = new DatabaseSync(path);
  earlier.exec(
    'DROP TRIGGER docs_chunked_on_insert; DROP TRIGGER docs_chunked_on_move; DROP TABLE list_chunks; DROP TABLE list_chunk_facets;',
  );
  earlier.close();

  const reopened = createSqliteReadStore(path);
  try {
    const state = chunkState('projects');
    assert.ok(
      state.chunks >= 10_000 / CHUNK_ROWS_MAX && state.largest <= CHUNK_ROWS_MAX,
      `${state.chunks} chunks, largest ${state.largest}`,
    );
    assert.deepEqual(state.byFacet, state.counted);
    const after = await Promise.all(
      [0, 2500, 5000, 9950].map((offset) =>
        reopened.list('projects', { facets: ['dossier', 'no_dossier'], offset, limit: 50 }),
      ),
    );
    assert.deepEqual(
      after.map((page) => [page.total, page.docs.map((d) => d.id)]),
      before.map((page) => [page.total, page.docs.map((d) => d.id)]),
    );
    // And later commits are counted in the chunks made on open.
    await reopened.commit(
      'projects',
      writes(10_000, 100, () => 'k9999'),
      2,
    );
    assert.deepEqual(chunkState('projects').byFacet, chunkState('projects').counted);
  } finally {
    await reopened.close();
  }
});
