/**
 * The page queries of the SQLite read store stay index ranges: EXPLAIN QUERY PLAN of the board (from
 * either end), delta (after a cursor and from a time) and call page (keyset) queries, run on a store
 * holding enough rows for the planner to prefer an index, must neither scan the docs table nor sort
 * in a temporary B-tree.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, it } from 'vitest';
import { PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS } from '../../projectors/projects.ts';
import { CALL_FACETS, CALLS_COLLECTION } from '../../projectors/calls.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import { chunkQueries } from '../../readmodels/sqlite/list-chunks.ts';
import { pageQueries, sqlLimit } from '../../readmodels/sqlite/sqlite-listing.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';

const dir = mkdtempSync(join(tmpdir(), 'pulseboard-plans-'));
const path = join(dir, 'readmodels.sqlite');
let db: DatabaseSync;

function rows(collection: string, facets: readonly string[], n: number): DocWrite[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${collection}-${String(i).padStart(5, '0')}`,
    doc: { i },
    state: {},
    seq: i + 1,
    writtenAt: new Date(Date.UTC(2026, 9, 1) + i * 1000).toISOString(),
    sortKey: new Date(Date.UTC(2026, 9, 1) + (i % 97) * 60_000).toISOString(),
    facet: facets[i % facets.length]!,
    keys: {},
  }));
}

beforeAll(async () => {
  const store = createSqliteReadStore(path);
  await store.commit(PROJECTS_COLLECTION, rows(PROJECTS_COLLECTION, [...PUBLIC_PROJECT_FACETS, 'pending'], 3000), 3000);
  await store.commit(CALLS_COLLECTION, rows(CALLS_COLLECTION, [CALL_FACETS.visible, 'suppressed'], 3000), 3000);
  await store.close();
  db = new DatabaseSync(path);
  db.exec('ANALYZE');
});
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function plan(sql: string, params: (string | number)[]): string[] {
  return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
}

/** Fails on a full scan of docs (a SCAN without an index) or a sort outside an index. */
function assertIndexRange(name: string, details: string[], index: RegExp): void {
  const text = details.join(' | ');
  assert.ok(!details.some((d) => /^SCAN docs\b/.test(d) && !/INDEX/.test(d)), `${name} scans docs: ${text}`);
  assert.ok(!details.some((d) => /TEMP B-TREE/.test(d)), `${name} sorts outside an index: ${text}`);
  assert.ok(
    details.some((d) => index.test(d)),
    `${name} does not use the expected index: ${text}`,
  );
}

const facetSets: [string, readonly string[] | undefined][] = [
  ['all public facets', PUBLIC_PROJECT_FACETS],
  ['one facet', [PUBLIC_PROJECT_FACETS[0]!]],
];

it('board pages, from the front and from the end, with or without a chunk edge, are ranges of a listing index', () => {
  for (const [label, facets] of facetSets) {
    for (const reversed of [false, true]) {
      for (const bounded of [false, true]) {
        const params = [
          PROJECTS_COLLECTION,
          ...(facets ?? []),
          ...(bounded ? ['2026-10-01T01:00:00.000Z', 'x'] : []),
          100,
        ];
        const details = plan(pageQueries.list(facets, reversed, bounded, 50), params);
        const range = bounded
          ? /USING COVERING INDEX docs_listing(_facet)? \(collection=\? (AND facet=\? )?AND \(sort_key,id\)[<>]\(\?,\?\)\)/
          : /USING COVERING INDEX docs_listing/;
        assertIndexRange(
          `board (${label}${reversed ? ', from the end' : ''}${bounded ? ', from a chunk edge' : ''})`,
          details,
          range,
        );
        assert.ok(
          details.some((d) => /SEARCH docs USING INTEGER PRIMARY KEY \(rowid=\?\)/.test(d)),
          `the page's rows are fetched by rowid: ${details.join(' | ')}`,
        );
      }
    }
  }
});

it('a board page is located by a walk of the chunk counts in key order, without sorting', () => {
  for (const [label, facets] of [...facetSets, ['every facet', undefined] as [string, undefined]]) {
    for (const ascending of [false, true]) {
      const details = plan(chunkQueries.walk(facets, ascending), [PROJECTS_COLLECTION, ...(facets ?? [])]);
      const text = details.join(' | ');
      assert.ok(
        details.some((d) => /SEARCH list_chunk(s|_facets) USING PRIMARY KEY \(collection=\?\)/.test(d)),
        `chunk walk (${label}): ${text}`,
      );
      assert.ok(!details.some((d) => /TEMP B-TREE/.test(d)), `chunk walk (${label}) sorts outside its key: ${text}`);
    }
  }
  // The commit's check for chunks to cut reads the partial index of full chunks only.
  assert.match(plan(chunkQueries.full, [PROJECTS_COLLECTION]).join(' | '), /USING INDEX list_chunks_full/);
  assert.match(
    plan(chunkQueries.rows(true), [PROJECTS_COLLECTION, 'a', 'b', 'c', 'd']).join(' | '),
    /COVERING INDEX docs_listing \(collection=\? AND \(sort_key,id\)>\(\?,\?\) AND \(sort_key,id\)<\(\?,\?\)\)/,
  );
});

it('delta pages are ranges of the (seq, id) index with both bounds', () => {
  for (const [label, facets] of facetSets) {
    for (const tieBreak of [true, false]) {
      const params = [PROJECTS_COLLECTION, 1500, 3000, ...(tieBreak ? [1500, 'x'] : []), ...(facets ?? [])];
      const details = plan(pageQueries.delta(facets, tieBreak, 101), params);
      assertIndexRange(
        `delta (${label}${tieBreak ? ', after a cursor' : ', from a time'})`,
        details,
        /docs_delta \(collection=\? AND seq>\? AND seq<\?\)/,
      );
    }
  }
});

it('call pages are ranges of a listing index, also after a cursor', () => {
  for (const before of [false, true]) {
    const params = [
      CALLS_COLLECTION,
      CALL_FACETS.visible,
      ...(before ? ['2026-10-01T01:00:00.000Z', '2026-10-01T01:00:00.000Z', 'x'] : []),
    ];
    const details = plan(pageQueries.keyset([CALL_FACETS.visible], before, 31), params);
    const range = before
      ? /docs_listing_facet \(collection=\? AND facet=\? AND sort_key<\?\)/
      : /docs_listing_facet \(collection=\? AND facet=\?\)/;
    assertIndexRange(`call page${before ? ' after a cursor' : ''}`, details, range);
  }
});

it('documents by a lookup value are a range of the lookup keys in id order, each document by its primary key', () => {
  const details = plan(pageQueries.byKey(101), [PROJECTS_COLLECTION, 'contract', '0xabc']);
  const text = details.join(' | ');
  assert.ok(
    details.some((d) => /^SEARCH k USING PRIMARY KEY \(collection=\? AND key=\? AND value=\?\)/.test(d)),
    `the lookup keys' range: ${text}`,
  );
  assert.ok(
    details.some((d) => /^SEARCH d USING INDEX sqlite_autoindex_docs_1 \(collection=\? AND id=\?\)/.test(d)),
    `each document by its key: ${text}`,
  );
  assert.ok(!details.some((d) => /TEMP B-TREE|^SCAN/.test(d)), `no scan, no sort: ${text}`);
});

it('page queries carry their LIMIT in the text, never bound (a bound LIMIT makes SQLite prepare the statement again on every run)', () => {
  const texts = [
    ...facetSets.flatMap(([, facets]) =>
      [false, true].flatMap((flag) => [
        pageQueries.list(facets, flag, !flag, 50),
        pageQueries.delta(facets, flag, 101),
        pageQueries.keyset(facets, flag, 31),
      ]),
    ),
    pageQueries.byKey(50),
  ];
  for (const text of texts) {
    assert.doesNotMatch(text, /LIMIT \?/, text);
    assert.match(text, /LIMIT (50|101|31)\b/, text);
  }
  for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60])
    assert.throws(() => sqlLimit(bad), RangeError);
});
