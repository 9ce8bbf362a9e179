/**
 * The PostgreSQL read store's page queries stay bounded index ranges: EXPLAIN ANALYZE of the very texts
 * the store runs (board pages from the front, deep and from the end, of one facet and of several; the
 * keyset page; delta pages after a cursor, of every facet and of several), on a store holding enough
 * rows for the planner to prefer a sequential scan where it could, must scan the documents only through
 * an index and touch no more rows than the page, its skip and one row per facet.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { CHUNK_ROWS_MAX } from '../../readmodels/list-chunks.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import { createPostgresReadStore, postgresQueries } from '../../readmodels/postgres/postgres-read-store.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';

const skip = await postgresSkipReason();
const S = '"pulseboard_g0"';
const COLLECTION = 'projects';
const FACETS = ['dossier', 'no_dossier', 'pending'];
const ROWS = 6000;

function rows(): DocWrite[] {
  return Array.from({ length: ROWS }, (_, i) => ({
    id: `p${String(i).padStart(5, '0')}`,
    doc: { i, text: 'x'.repeat(200) },
    state: {},
    seq: i + 1,
    writtenAt: new Date(Date.UTC(2026, 9, 1) + i * 1000).toISOString(),
    sortKey: new Date(Date.UTC(2026, 9, 1) + (i % 997) * 60_000).toISOString(),
    facet: FACETS[i % FACETS.length]!,
    keys: {},
  }));
}

type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
};

function scans(node: PlanNode): PlanNode[] {
  const own = node['Relation Name'] === 'docs' ? [node] : [];
  return [...own, ...(node.Plans ?? []).flatMap(scans)];
}

describe('PostgreSQL page queries', () => {
  let database: ScratchDatabase | undefined;
  let client: pg.Client | undefined;
  beforeAll(async () => {
    if (skip) return;
    database = await scratchDatabase('pulseboard_plans');
    const store = createPostgresReadStore(database.url);
    await store.commit(COLLECTION, rows(), ROWS);
    await store.close();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(`VACUUM ANALYZE ${S}.docs`);
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  async function rowsTouched(build: (p: ReturnType<typeof postgresQueries.params>) => string): Promise<number> {
    const p = postgresQueries.params();
    const text = build(p);
    const [{ 'QUERY PLAN': plan }] = (
      await client!.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, p.values)
    ).rows as [{ 'QUERY PLAN': [{ Plan: PlanNode }] }];
    const found = scans(plan[0].Plan);
    assert.ok(found.length > 0, 'the query reads the documents');
    for (const scan of found) assert.match(scan['Node Type'], /^Index (Only )?Scan$/, JSON.stringify(plan));
    return found.reduce((sum, scan) => sum + scan['Actual Rows'] * scan['Actual Loops'], 0);
  }

  const first = (facets: readonly string[] | undefined) =>
    rowsTouched((p) =>
      postgresQueries.pageSql(S, p, COLLECTION, {
        order: 'listing',
        direction: 'DESC',
        facets,
        where: '',
        skip: 0,
        limit: 50,
      }),
    );
  const deep = (facets: readonly string[] | undefined, offset: number) =>
    rowsTouched((p) => postgresQueries.deepPageSql(S, p, COLLECTION, facets, offset, 50));

  it(
    'board pages: the first, deep ones and the last, through the chunks; one facet and several',
    skipFor(skip),
    async () => {
      for (const facets of [undefined, ['dossier'], ['dossier', 'no_dossier']]) {
        const n = facets?.length ?? 1;
        const total = (ROWS * (facets?.length ?? FACETS.length)) / FACETS.length;
        assert.ok((await first(facets)) <= 50 * n, `first page, ${String(facets)}`);
        for (const offset of [2100, Math.floor(total / 2), total - 20]) {
          // The walk to the page's first row on index keys (at most one chunk's rows per facet), then the page.
          const touched = await deep(facets, offset);
          assert.ok(touched <= (CHUNK_ROWS_MAX + 1 + 50) * n, `offset ${offset} touched ${touched}, ${String(facets)}`);
        }
      }
    },
  );

  it('the keyset page and delta pages after a cursor', skipFor(skip), async () => {
    for (const facets of [undefined, ['dossier'], ['dossier', 'no_dossier']]) {
      const n = facets?.length ?? 1;
      const keyset = await rowsTouched((p) =>
        postgresQueries.pageSql(S, p, COLLECTION, {
          order: 'listing',
          direction: 'DESC',
          facets,
          where: `AND (sort_key, id) < (${p.add('2026-10-01T08:00:00.000Z')}, ${p.add('p02000')})`,
          skip: 0,
          limit: 50,
        }),
      );
      assert.ok(keyset <= 50 * n, `keyset touched ${keyset}`);
      const delta = await rowsTouched((p) =>
        postgresQueries.pageSql(S, p, COLLECTION, {
          order: 'delta',
          direction: 'ASC',
          facets,
          where: `AND (seq, id) > (${p.add(3000)}, ${p.add('p02999')}) AND seq <= ${p.add(ROWS)}`,
          skip: 0,
          limit: 50,
        }),
      );
      assert.ok(delta <= 50 * n, `delta touched ${delta}`);
    }
  });
});
