/**
 * The history model's reads stay index ranges (EXPLAIN QUERY PLAN of the very texts the store runs,
 * on a store holding enough rows for the planner to prefer an index): a board page as of P walks
 * the placements' primary key (or its facet index) from the nearer end and probes each row's version
 * by primary key, so it costs the placements between that end and the page (about one a project)
 * plus one probe per row, never a scan of the versions nor a sort.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, it } from 'vitest';
import { PROJECT_FACETS, PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { historyQueries } from '../../readmodels/sqlite/sqlite-history.ts';

const dir = mkdtempSync(join(tmpdir(), 'pulseboard-history-plans-'));
const path = join(dir, 'readmodels.sqlite');
let db: DatabaseSync;

beforeAll(async () => {
  const store = createSqliteReadStore(path);
  // 2,000 projects written 5 times each; every fifth moves between facets.
  const writes: DocWrite[] = [];
  for (let i = 0; i < 2000; i++) {
    const sortKey = new Date(Date.UTC(2026, 9, 1) + (i % 113) * 60_000).toISOString();
    const versions = Array.from({ length: 5 }, (_, k) => ({
      seq: k * 2000 + i + 1,
      writtenAt: new Date(Date.UTC(2026, 10, 1) + (k * 2000 + i) * 1000).toISOString(),
      sortKey,
      facet: k > 2 && i % 5 === 0 ? PROJECT_FACETS.dossier : PROJECT_FACETS.noDossier,
      doc: { i, k },
    }));
    const last = versions[4]!;
    writes.push({
      id: `p${i}`,
      doc: last.doc,
      state: {},
      seq: last.seq,
      writtenAt: last.writtenAt,
      sortKey,
      facet: last.facet,
      keys: {},
      versions,
    });
  }
  await store.commit(PROJECTS_COLLECTION, writes, 10_000);
  await store.close();
  db = new DatabaseSync(path);
  db.exec('ANALYZE');
});
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const plan = (sql: string, params: (string | number)[]): string[] =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);

function assertIndexed(name: string, details: string[], expected: RegExp[]): void {
  const text = details.join(' | ');
  assert.ok(
    !details.some((d) => /^SCAN (history_versions|history_placements|v|a|b)\b/.test(d) && !/INDEX/.test(d)),
    `${name} scans a table: ${text}`,
  );
  assert.ok(!details.some((d) => /TEMP B-TREE/.test(d)), `${name} sorts outside an index: ${text}`);
  for (const index of expected)
    assert.ok(
      details.some((d) => index.test(d)),
      `${name} does not use ${index}: ${text}`,
    );
}

const VERSION_PROBE =
  /SEARCH history_versions USING (COVERING )?INDEX sqlite_autoindex_history_versions_1 \(collection=\? AND id=\? AND valid_from<\?\)/;

it('a board page as of P, from either end, all facets or one, walks placements in order and probes versions by key', () => {
  for (const facets of [undefined, [PROJECT_FACETS.dossier]] as const) {
    for (const reversed of [false, true]) {
      const details = plan(historyQueries.list(facets, reversed, 50), [
        PROJECTS_COLLECTION,
        5000,
        5000,
        ...(facets ?? []),
        100,
      ]);
      const walk = facets
        ? /history_placements USING COVERING INDEX history_placements_facet \(collection=\? AND facet=\?\)/
        : /history_placements USING PRIMARY KEY \(collection=\?\)/;
      assertIndexed(`board as of P (${facets ? 'one facet' : 'all'}${reversed ? ', from the end' : ''})`, details, [
        walk,
        /SEARCH v USING INTEGER PRIMARY KEY \(rowid=\?\)/,
        VERSION_PROBE,
      ]);
    }
  }
});

it('an export walk as of P is a keyset range of the placements', () => {
  const details = plan(historyQueries.scan(undefined, true, 500), [
    PROJECTS_COLLECTION,
    5000,
    5000,
    '2026-10-01T01:00:00.000Z',
    '2026-10-01T01:00:00.000Z',
    'p5',
  ]);
  assertIndexed('scan as of P', details, [
    /history_placements USING PRIMARY KEY \(collection=\? AND sort_key<\?\)/,
    VERSION_PROBE,
  ]);
});

it('a project as of P, totals as of P and the points are single probes', () => {
  assertIndexed('project as of P', plan(historyQueries.get, [PROJECTS_COLLECTION, 'p7', 5000]), [VERSION_PROBE]);
  assertIndexed('count as of P', plan(historyQueries.count, [PROJECTS_COLLECTION, 'dossier', 5000]), [
    /SEARCH history_counts USING PRIMARY KEY \(collection=\? AND facet=\? AND at_seq<\?\)/,
  ]);
  assertIndexed('point at a position', plan(historyQueries.pointAtSeq, [PROJECTS_COLLECTION, 5000]), [
    /history_versions_delta \(collection=\? AND valid_from<\?\)/,
  ]);
});

it("a commit reads each written document's current version by one probe of the versions' key", () => {
  const details = plan(historyQueries.currentVersion, [PROJECTS_COLLECTION, 'p7']);
  assertIndexed('current version', details, [
    /SEARCH v USING (COVERING )?INDEX sqlite_autoindex_history_versions_1 \(collection=\? AND id=\?\)/,
  ]);
});

it('changes between two points walk the writes in (A, B] in delta order, each probing its version at A', () => {
  for (const after of [false, true]) {
    const details = plan(historyQueries.changes(after, 50), [
      PROJECTS_COLLECTION,
      3000,
      6000,
      ...(after ? [3100, 'p5'] : []),
    ]);
    assertIndexed(`changes${after ? ' after a cursor' : ''}`, details, [
      /SEARCH a USING (COVERING )?INDEX history_versions_delta \(collection=\? AND valid_from>\? AND valid_from<\?\)/,
      VERSION_PROBE,
    ]);
  }
});
