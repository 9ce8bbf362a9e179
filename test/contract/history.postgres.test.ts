import assert from 'node:assert/strict';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PROJECT_FACETS, PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { createPostgresHistory, type PostgresHistory } from '../../readmodels/postgres/postgres-history.ts';
import { createPool } from '../../readmodels/postgres/postgres-pool.ts';
import { createPostgresReadStore, postgresReadStoreOn } from '../../readmodels/postgres/postgres-read-store.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';
import { historyContract, written } from './history.contract.ts';

const skip = await postgresSkipReason();

// Every store the suite opens gets a database of its own, dropped (with any connection left on it) at the end.
const databases: ScratchDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});

// The second: a replay's new generation (its own schema, commits without waiting for the WAL flush).
for (const [name, open] of [
  ['postgres', (url: string) => createPostgresReadStore(url)],
  [
    'postgres building a generation',
    (url: string) => postgresReadStoreOn(createPool(url), 3, { ownsPool: true, build: true }),
  ],
] as const) {
  historyContract(
    name,
    async () => {
      const database = await scratchDatabase('pulseboard_history');
      databases.push(database);
      const store = open(database.url);
      return {
        store,
        async dispose() {
          await store.close();
        },
      };
    },
    { skip },
  );
}

/**
 * The plans PostgreSQL makes of every statement the history reads with, on a board of 2,000 projects
 * written 5 times each (every fifth moving to the dossier facet at its fourth write), analysed as a
 * served one would be: each history table is read by an index (those of a row per facet or collection
 * aside) (never a sequential or bitmap scan), no
 * history row is sorted, a listing walks the placements as index keys only, and a project as of P
 * fetches one version.
 */
describe('PostgreSQL history: every read is an index range', skipFor(skip), () => {
  const C = PROJECTS_COLLECTION;
  const N = 2000;
  let database: ScratchDatabase;
  let store: ReadStore;
  let pool: pg.Pool;
  let history: PostgresHistory;
  /** The statements the history sent since the last reset, as sent. */
  const sent: { text: string; values: unknown[] }[] = [];

  beforeAll(async () => {
    database = await scratchDatabase('pulseboard_history_plans');
    store = createPostgresReadStore(database.url);
    const docs = Array.from({ length: N }, (_, i) =>
      written(
        `p${i}`,
        Array.from({ length: 5 }, (_, k) => ({
          seq: k * N + i + 1,
          sortKey: new Date(Date.UTC(2026, 9, 1) + (i % 113) * 60_000).toISOString(),
          facet: k > 2 && i % 5 === 0 ? PROJECT_FACETS.dossier : PROJECT_FACETS.noDossier,
          doc: { i, k, dossier: k > 2 ? { text: `dossier ${i} `.repeat(30) } : null },
          sharedMember: 'dossier',
        })),
      ),
    );
    await store.commit(C, docs, 5 * N, 0);
    // The history of the store's generation (0), read through a pool whose statements are recorded.
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        const [config, values] = args;
        const text = typeof config === 'string' ? config : (config as { text: string }).text;
        const params = typeof config === 'string' ? values : (config as { values?: unknown[] }).values;
        if (text.includes('history_')) sent.push({ text, values: Array.isArray(params) ? params : [] });
        return query(...args);
      };
    });
    history = createPostgresHistory(pool, 'pulseboard_g0');
    await pool.query('VACUUM ANALYZE');
  }, 300_000);
  afterAll(async () => {
    await pool?.end();
    await store?.close();
    await database?.drop();
  });

  type PlanNode = {
    'Node Type': string;
    'Relation Name'?: string;
    'Index Name'?: string;
    'Actual Rows': number;
    'Actual Loops': number;
    'Heap Fetches'?: number;
    'Shared Hit Blocks': number;
    'Shared Read Blocks': number;
    Plans?: PlanNode[];
  };
  const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];
  /** The tables of a row per collection or facet are read whole, as any few rows are. */
  const small = new Set(['history_facets', 'history_recorded_from']);
  const historyScan = (node: PlanNode) =>
    (node['Relation Name']?.startsWith('history_') ?? false) && !small.has(node['Relation Name']!);

  /** The statements `read` sends, each explained as it ran: its plan's nodes. */
  async function plansOf(read: () => Promise<unknown>): Promise<{ text: string; nodes: PlanNode[] }[]> {
    sent.length = 0;
    await read();
    const explained = [];
    for (const { text, values } of sent.splice(0)) {
      const result = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
        values,
      );
      explained.push({ text, nodes: nodes(result.rows[0]!['QUERY PLAN'][0].Plan) });
    }
    assert.ok(explained.length > 0, 'the read sent a statement');
    return explained;
  }

  /** Every history table read by an index, and no history row sorted. */
  function assertIndexed(plans: { text: string; nodes: PlanNode[] }[], what: string): void {
    for (const { text, nodes: all } of plans) {
      for (const node of all.filter(historyScan)) {
        assert.match(
          node['Node Type'],
          /^Index (Only )?Scan$/,
          `${what}: ${node['Node Type']} on ${node['Relation Name']}\n${text}`,
        );
      }
      for (const sort of all.filter((n) => /Sort/.test(n['Node Type']) && n['Node Type'] !== 'Merge Append'))
        assert.ok(!nodes(sort).some(historyScan), `${what}: history rows sorted\n${text}`);
    }
  }

  const at = 3 * N + 500;

  it('a project as of P, several, the totals, the last write: probes of one key each', async () => {
    for (const [what, read] of [
      ['get', () => history.get(C, 'p7', at)],
      // Ids without a version, before and after every project's: each probe ends at its own key.
      ['getMany', () => history.getMany(C, ['p7', 'p8', 'nobody', 'zz'], at)],
      ['get of none', () => history.get(C, 'zz', at)],
      ['pointAtSeq', () => history.pointAtSeq(C, at)],
      ['recordedFrom', () => history.recordedFrom(C)],
    ] as const) {
      const plans = await plansOf(read);
      assertIndexed(plans, what);
      for (const node of plans.flatMap((p) => p.nodes).filter(historyScan)) {
        assert.ok(node['Actual Rows'] <= 1, `${what}: ${node['Actual Rows']} rows from ${node['Relation Name']}`);
        // A probe reads the index's path to one key and one row (the collection's whole index is ~100 blocks).
        const blocks = (node['Shared Hit Blocks'] + node['Shared Read Blocks']) / Math.max(1, node['Actual Loops']);
        assert.ok(blocks <= 6, `${what}: ${blocks} blocks a probe of ${node['Relation Name']}`);
      }
    }
    for (const facets of [undefined, [PROJECT_FACETS.dossier], [PROJECT_FACETS.dossier, PROJECT_FACETS.noDossier]]) {
      const plans = await plansOf(() => history.count(C, at, facets));
      assertIndexed(plans, 'count');
      const probes = plans.flatMap((p) => p.nodes).filter((n) => n['Relation Name'] === 'history_counts');
      assert.ok(
        probes.every((n) => n['Actual Rows'] <= 1),
        'one count row per facet',
      );
    }
  });

  it('a board page as of P from either end, per facet, and the keyset walk: the page walked as keys', async () => {
    for (const facets of [undefined, [PROJECT_FACETS.noDossier], [PROJECT_FACETS.dossier, PROJECT_FACETS.noDossier]]) {
      const total = await history.count(C, at, facets);
      assert.ok(total > 1020);
      // The whole board then, by keyset: what every page is a slice of, near the front or deep from either end.
      const board = (await history.scan(C, at, { ...(facets ? { facets } : {}), limit: N })).map((d) => d.id);
      assert.equal(board.length, total);
      for (const offset of [0, 300, 1010, total - 20]) {
        const page = await history.list(C, at, { ...(facets ? { facets } : {}), offset, limit: 20 });
        assert.deepEqual(
          page.docs.map((d) => d.id),
          board.slice(offset, offset + 20),
          `page at ${offset}`,
        );
        assert.equal(page.total, total);
        const plans = await plansOf(() => history.list(C, at, { ...(facets ? { facets } : {}), offset, limit: 20 }));
        assertIndexed(plans, `list at ${offset}`);
        const all = plans.flatMap((p) => p.nodes);
        // Whether the planner reads the heap beside the index is the visibility map's (a server's
        // vacuum decides it, not the store): what the store decides is an index walk from the nearer end.
        const nearer = Math.min(offset, total - offset - 20) + 20;
        for (const node of all.filter((n) => n['Relation Name'] === 'history_placements')) {
          assert.match(node['Index Name'] ?? '', /^history_placements_/, 'the placements walked by their index');
          assert.ok(
            node['Actual Rows'] <= nearer,
            `${node['Actual Rows']} placements for a page ${nearer} from its end`,
          );
        }
        // The versions fetched are the page's: one probe for each row.
        const probes = all.filter((n) => n['Relation Name'] === 'history_versions');
        assert.ok(probes.length > 0);
        for (const probe of probes) assert.ok(probe['Actual Loops'] <= 20 && probe['Actual Rows'] <= 1);
      }
      const scanned = await history.scan(C, at, { ...(facets ? { facets } : {}), limit: 10 });
      const last = scanned[scanned.length - 1]!;
      assertIndexed(
        await plansOf(() =>
          history.scan(C, at, {
            ...(facets ? { facets } : {}),
            after: { sortKey: last.sortKey, id: last.id },
            limit: 10,
          }),
        ),
        'scan',
      );
    }
  });

  it('changes between two points: a walk of the delta index, each row with one probe', async () => {
    for (const query of [
      { from: at - 100, to: at, limit: 50 },
      { from: 0, to: 5 * N, limit: 50 },
      { from: 0, to: 5 * N, limit: 50, after: { seq: 4 * N, id: 'p1' } },
    ]) {
      const plans = await plansOf(() => history.changes(C, query));
      assertIndexed(plans, `changes ${JSON.stringify(query)}`);
      const walk = plans.flatMap((p) => p.nodes).find((n) => n['Index Name'] === 'history_versions_delta');
      assert.ok(walk, 'the writes in range walked by the delta index');
      assert.ok(walk['Actual Rows'] <= query.limit + 1, `${walk['Actual Rows']} writes for a page of ${query.limit}`);
    }
  });
});

describe('PostgreSQL history: where it starts', skipFor(skip), () => {
  const C = PROJECTS_COLLECTION;
  const at = (seq: number) => ({ seq, sortKey: 'k', facet: PROJECT_FACETS.noDossier, doc: { seq } });

  it('a generation whose tables are not made yet holds no history, and reads fail nothing', async () => {
    const database = await scratchDatabase('pulseboard_history_empty');
    const store = createPostgresReadStore(database.url);
    try {
      const history = store.history!;
      assert.equal(await history.get(C, 'a', 5), null);
      assert.deepEqual(await history.list(C, 5, { offset: 0, limit: 10 }), { total: 0, docs: [] });
      assert.equal(await history.count(C, 5), 0);
      assert.equal(await history.pointAtSeq(C, 5), null);
      assert.equal(await history.recordedFrom(C), 0);
      // Then written: the same reads find it.
      await store.commit(C, [written('a', [at(1), at(3)])], 3, 0);
      assert.equal((await history.get(C, 'a', 2))?.json, '{"seq":1}');
      assert.equal(await history.count(C, 5), 1);
    } finally {
      await store.close();
      await database.drop();
    }
  });

  it('tables made beside documents already written record from the checkpoint they had then', async () => {
    const database = await scratchDatabase('pulseboard_history_late');
    const first = createPostgresReadStore(database.url);
    try {
      await first.commit(C, [written('a', [at(1), at(3)])], 4, 0);
      assert.equal(await first.history!.recordedFrom(C), 0);
    } finally {
      await first.close();
    }
    // A store written before the model existed: its history tables are not there.
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ name: string }>(
        "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'pulseboard_g0' AND tablename LIKE 'history%'",
      );
      assert.ok(rows.length > 0);
      await admin.query(`DROP TABLE ${rows.map((r) => `pulseboard_g0.${r.name}`).join(', ')}`);
    } finally {
      await admin.end();
    }
    const second = createPostgresReadStore(database.url);
    try {
      assert.equal(await second.checkpoint(C), 4);
      const history = second.history!;
      assert.equal(await history.recordedFrom(C), 4);
      await second.commit(C, [written('a', [at(6)]), written('b', [at(7)])], 7, 4);
      assert.equal(await history.recordedFrom(C), 4, 'still, after its first commit');
      assert.equal((await history.get(C, 'a', 6))?.json, '{"seq":6}');
      assert.equal(await history.get(C, 'a', 5), null, 'the writes before it are not recorded');
    } finally {
      await second.close();
      await database.drop();
    }
  });
});
