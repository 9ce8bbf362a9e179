/**
 * The MongoDB history's query plans on a real server (testcontainers; skipped where no Docker engine
 * answers, where history.mongodb-queries.test.ts checks the same shapes on the driver stand-in). Every
 * find the store sends for the history (seen through the driver's command monitoring) is explained: an
 * index scan of the hinted index, never a collection scan nor a sort in memory; a board page's walk of
 * the placements is covered (no document fetched); a page's versions fetch only the rows returned; a
 * project as of P and the totals as of P are one key each.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, it } from 'vitest';
import { MongoClient, type Document } from 'mongodb';
import { PROJECT_FACETS, PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import { mongoReadStoreOn } from '../../readmodels/mongodb/mongodb-read-store.ts';
import type { DocWrite, ReadStore } from '../../readmodels/port.ts';
import { skipUnlessDocker, startMongo } from '../support/containers.ts';
import { skipFor } from '../support/skip.ts';

const skip = await skipUnlessDocker('MongoDB');
const C = PROJECTS_COLLECTION;

let server: Awaited<ReturnType<typeof startMongo>> | undefined;
let client: MongoClient | undefined;
let store: ReadStore | undefined;
/** The history finds the store sent since the last reset. */
const sent: Document[] = [];

/** 2,000 projects written 5 times each; every fifth moves to the dossier facet at its fourth write. */
function writes(): DocWrite[] {
  return Array.from({ length: 2000 }, (_, i) => {
    const sortKey = new Date(Date.UTC(2026, 9, 1) + (i % 113) * 60_000).toISOString();
    const versions = Array.from({ length: 5 }, (_, k) => ({
      seq: k * 2000 + i + 1,
      writtenAt: new Date(Date.UTC(2026, 10, 1) + (k * 2000 + i) * 1000).toISOString(),
      sortKey,
      facet: k > 2 && i % 5 === 0 ? PROJECT_FACETS.dossier : PROJECT_FACETS.noDossier,
      doc: { i, k },
    }));
    const last = versions[4]!;
    return {
      id: `p${i}`,
      doc: last.doc,
      state: {},
      seq: last.seq,
      writtenAt: last.writtenAt,
      sortKey,
      facet: last.facet,
      keys: {},
      versions,
    };
  });
}

beforeAll(async () => {
  if (skip) return;
  server = await startMongo();
  client = new MongoClient(server.url(`pulseboard_history_plans_${randomUUID().replaceAll('-', '').slice(0, 12)}`), {
    monitorCommands: true,
  });
  client.on('commandStarted', (event) => {
    if (event.commandName === 'find' && String(event.command.find).startsWith('_pulseboard_history'))
      sent.push(event.command);
  });
  store = mongoReadStoreOn(client, 0, { ownsClient: false });
  await store.commit(C, writes(), 10_000, 0);
}, 300_000);
afterAll(async () => {
  await store?.close();
  await client?.close();
  await server?.stop();
});

type Plan = { stages: string[]; indexes: string[]; keys: number; docs: number; returned: number };

/** The winning plan's stages and indexes and the execution's counts, for a find as the store sent it. */
async function explain(command: Document): Promise<Plan> {
  const find: Document = { find: command.find, filter: command.filter };
  for (const field of ['sort', 'projection', 'hint', 'skip', 'limit'])
    if (field in command) find[field] = command[field];
  const result = await client!.db().command({ explain: find, verbosity: 'executionStats' });
  const stages: string[] = [];
  const indexes: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    const { stage, indexName } = node as { stage?: unknown; indexName?: unknown };
    if (typeof stage === 'string') stages.push(stage);
    if (typeof indexName === 'string') indexes.push(indexName);
    for (const value of Object.values(node)) walk(value);
  };
  walk(result.queryPlanner.winningPlan);
  const stats = result.executionStats as { totalKeysExamined: number; totalDocsExamined: number; nReturned: number };
  return { stages, indexes, keys: stats.totalKeysExamined, docs: stats.totalDocsExamined, returned: stats.nReturned };
}

/** Runs `read`, then explains every history find it sent; each is an index scan of its hint, with no sort in memory. */
async function plansOf(read: () => Promise<unknown>): Promise<{ command: Document; plan: Plan }[]> {
  sent.length = 0;
  await read();
  assert.ok(sent.length > 0, 'the read sent history finds');
  const plans = [];
  for (const command of [...sent]) {
    const plan = await explain(command);
    const what = `${command.find} ${JSON.stringify(command.filter)}: ${plan.stages.join(' < ')}`;
    assert.ok(!plan.stages.includes('COLLSCAN'), `scans the collection: ${what}`);
    assert.ok(!plan.stages.includes('SORT'), `sorts in memory: ${what}`);
    assert.ok(
      plan.indexes.length > 0 && plan.indexes.every((name) => name === command.hint),
      `${what} uses ${plan.indexes.join()} (hint ${command.hint})`,
    );
    plans.push({ command, plan });
  }
  return plans;
}

it(
  'a board page as of P walks the placements covered, from either end, and fetches only its rows',
  { ...skipFor(skip), timeout: 120_000 },
  async () => {
    const history = store!.history!;
    for (const facets of [undefined, [PROJECT_FACETS.dossier]]) {
      for (const [at, offset] of [
        [5000, 0],
        [5000, 900],
        [9000, 1500],
        [10_000, 20],
      ] as const) {
        const plans = await plansOf(() => history.list(C, at, { ...(facets ? { facets } : {}), offset, limit: 25 }));
        const walk = plans.find((p) => p.command.find === '_pulseboard_history_placements');
        assert.ok(walk, 'the page walked the placements');
        assert.ok(!walk.plan.stages.includes('FETCH'), `the walk fetches documents: ${walk.plan.stages.join(' < ')}`);
        assert.equal(walk.plan.docs, 0);
        const versions = plans.filter((p) => p.command.find === '_pulseboard_history_versions');
        for (const { plan } of versions)
          assert.equal(plan.docs, plan.returned, 'a version is fetched only when it is the one valid at P');
      }
    }
  },
);

it(
  'a project and the totals as of P are one key each; points, changes and a commit read index ranges',
  { ...skipFor(skip), timeout: 120_000 },
  async () => {
    const history = store!.history!;
    for (const at of [1, 4321, 10_000]) {
      for (const { plan } of await plansOf(() => history.get(C, 'p17', at))) {
        assert.ok(plan.keys <= 2 && plan.docs <= 1, `get: ${plan.keys} keys, ${plan.docs} documents`);
      }
      for (const { plan } of await plansOf(() => history.count(C, at, [PROJECT_FACETS.dossier]))) {
        assert.ok(plan.keys <= 2 && plan.docs <= 1, `count: ${plan.keys} keys, ${plan.docs} documents`);
      }
      await plansOf(() => history.pointAtSeq(C, at));
      await plansOf(() => history.getMany(C, ['p1', 'p2', 'p3'], at));
      await plansOf(() => history.changes(C, { from: at - 1, to: 10_000, limit: 40 }));
      await plansOf(() =>
        history.changes(C, { from: at - 1, to: 10_000, limit: 40, after: { seq: 9000, id: 'p999' } }),
      );
      await plansOf(() =>
        history.scan(C, at, { limit: 40, after: { sortKey: '2026-10-01T01:00:00.000Z', id: 'p500' } }),
      );
    }
    // A commit's reads of the open versions and the latest counts.
    await plansOf(() =>
      store!.commit(
        C,
        writes()
          .slice(0, 10)
          .map((w, i) => {
            const v = { ...w.versions![4]!, seq: 10_001 + i, doc: { again: i } };
            return { ...w, doc: v.doc, seq: v.seq, versions: [v] };
          }),
        10_010,
        10_000,
      ),
    );
  },
);
