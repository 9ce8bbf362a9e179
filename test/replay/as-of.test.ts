import assert from 'node:assert/strict';
import { describe, it, vi } from 'vitest';
import { sourceEventId } from '../../events/ids.ts';
import { PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import { projectHistorySchema } from '../../readmodels/schemas.ts';
import { projectReadAsOfSchema } from '../../readmodels/history-schemas.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { appendProjectHistory, prng } from '../support/seed.ts';

const START = Date.parse('2026-11-01T00:00:00Z');
const STEP_MS = 1000;
const iso = (ms: number) => new Date(ms).toISOString();

/** The same instant spelled with a +02:00 offset. */
function withOffset(ms: number): string {
  return `${new Date(ms + 2 * 3_600_000).toISOString().slice(0, 23)}+02:00`;
}

const dossier = (n: number) => ({
  name: `Life ${n}`,
  category: 'dex',
  description: `revision ${n}`,
  stage: 'live',
  confidence: 'medium',
  chains: ['base'],
  founders: [],
  backers: [],
  notable: [],
  token: { ticker: 'LIF', contract: '0x2222222222222222222222222222222222222222', chain: 'base' },
  links: { site: 'https://life.example', docs: null, github: null },
  unverified: [],
  onchain: null,
});

/** A generated life of one project: every kind of event it can see, in a seeded order. */
function lifeEvents(steps: number, seed: number): { type: string; data: Record<string, unknown> }[] {
  const rand = prng(seed);
  const projectId = 'life';
  const at = (i: number) => new Date(Date.parse('2026-10-01T00:00:00Z') + i * 5 * 3_600_000).toISOString();
  // Before the first sighting the project exists only in pending documents.
  const events: { type: string; data: Record<string, unknown> }[] = [
    { type: 'vote.cast', data: { projectId, at: at(0), voterId: 'v0', name: 'Early', avatar: null, direction: 'up' } },
    { type: 'dossier.written', data: { projectId, at: at(0), dossier: dossier(0) } },
  ];
  events.push({
    type: 'project.sighted',
    data: { projectId, at: at(1), handle: 'lifelabs', name: 'Life Labs', fol: 100, why: 'new' },
  });
  let fol = 100;
  for (let i = 2; events.length < steps; i++) {
    const pick = rand();
    if (pick < 0.35) {
      fol += Math.floor(rand() * 300) - 50;
      const data: Record<string, unknown> = { projectId, at: at(i), fol };
      if (rand() < 0.15) data.handle = rand() < 0.5 ? 'lifelabs' : 'life_reborn';
      events.push({ type: 'project.sighted', data });
    } else if (pick < 0.45) {
      // Re-sends the current values: folded, but not a write.
      events.push({ type: 'project.sighted', data: { projectId, at: at(i - 1), fol: fol - 1 } });
    } else if (pick < 0.6) {
      events.push({
        type: 'vote.cast',
        data: {
          projectId,
          at: at(i),
          voterId: `v${Math.floor(rand() * 5)}`,
          name: 'V',
          avatar: null,
          direction: rand() < 0.7 ? 'up' : 'down',
        },
      });
    } else if (pick < 0.68) {
      events.push({ type: 'dossier.written', data: { projectId, at: at(i), dossier: dossier(i) } });
    } else if (pick < 0.76) {
      events.push({
        type: 'onchain.checked',
        data: {
          projectId,
          at: at(i),
          onchain: {
            symbol: 'LIF',
            mcap: 1000 * i,
            holders: i,
            liquidity: null,
            change24h: null,
            buys24h: null,
            sells24h: null,
            top10Rate: null,
            mintRenounced: null,
            lpLocked: null,
            honeypot: null,
          },
        },
      });
    } else if (pick < 0.84) {
      events.push({
        type: 'calltracker.checked',
        data: {
          projectId,
          at: at(i),
          status: 'matched',
          historyComplete: rand() < 0.5,
          posts: i,
          firstMcap: 10,
          mcap: 10 + i,
        },
      });
    } else if (pick < 0.9) {
      events.push({
        type: 'research.updated',
        data: { projectId, at: at(i), state: rand() < 0.5 ? 'queued' : 'ready' },
      });
    } else if (pick < 0.95) {
      events.push({
        type: 'followers.observed',
        data: { projectId, at: at(i), source: 'followerscope', handle: 'lifelabs', value: fol + 3, checkedAt: at(i) },
      });
    } else {
      events.push({ type: 'rival.listed', data: { projectId, at: at(i + 2) } });
    }
  }
  return events;
}

type Snapshot = {
  recordedAt: number;
  position: number;
  type: string;
  status: number;
  project: any;
  context: any;
  seq: number | null;
};

/** Strips what differs on every read. */
const contextOf = (body: any) => {
  const context = structuredClone(body.context);
  delete context.freshness.readAt;
  return context;
};

async function recordLife(h: Harness, key: string): Promise<Snapshot[]> {
  const snapshots: Snapshot[] = [];
  const events = lifeEvents(60, 8);
  for (let i = 0; i < events.length; i++) {
    const { type, data } = events[i]!;
    // Other projects' events land between the steps, at their own instants.
    if (i % 7 === 3) {
      await appendProjectHistory(h.stores.log, { projects: 5, steps: 3, seed: 500 + i, prefix: `noise${i}` });
      vi.advanceTimersByTime(STEP_MS);
    }
    const result = await h.stores.log.append('project-life', [
      { id: sourceEventId(type, `life-${i}`), type, data, metadata: {} },
    ]);
    assert.ok(result.ok);
    const position = result.events[0]!.position;
    const recordedAt = Date.now();
    vi.advanceTimersByTime(STEP_MS);
    await h.stores.catchUp();
    const plain = await h.get('/v1/projects/life', key);
    const enriched = await h.get('/v1/projects/life?include=context', key);
    const stored = await h.stores.store.get(PROJECTS_COLLECTION, 'life');
    snapshots.push({
      recordedAt,
      position,
      type,
      status: plain.status,
      project: plain.status === 200 ? plain.json().project : null,
      context: enriched.status === 200 ? contextOf(enriched.json()) : null,
      seq: stored?.seq ?? null,
    });
  }
  return snapshots;
}

describe('as-of reads and project history', () => {
  it('asOf at many instants of a generated life gives the live document as it was then, folded by the same code', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    const h = await createHarness();
    try {
      const key = await h.key('asof', ['allow']);
      vi.advanceTimersByTime(STEP_MS);
      const life = await recordLife(h, key);
      assert.equal(life[0]!.status, 404, 'not public before its first sighting');
      assert.ok(life.filter((s) => s.status === 200).length > 50);

      const firstSighting = life.findIndex((s) => s.status === 200);
      for (let i = 0; i < life.length; i++) {
        const step = life[i]!;
        for (const at of [iso(step.recordedAt), iso(step.recordedAt + STEP_MS / 2), withOffset(step.recordedAt)]) {
          const res = await h.get(`/v1/projects/life?asOf=${encodeURIComponent(at)}`, key);
          assert.equal(res.status, step.status, `asOf ${at} (step ${i}, ${step.type})`);
          if (step.status !== 200) {
            assert.equal(res.json().error.code, 'not_found');
            continue;
          }
          // The answer names the point it is for (issue 43).
          assert.ok(projectReadAsOfSchema.safeParse(res.json()).success);
          assert.deepEqual(res.json().project, step.project, `asOf ${at} (step ${i}, ${step.type})`);
        }
        if (i % 5 === 0 && step.status === 200) {
          const res = await h.get(
            `/v1/projects/lifelabs?include=context&asOf=${encodeURIComponent(iso(step.recordedAt))}`,
            key,
          );
          // The handle resolves against the current board; it may have moved on since.
          const byId = await h.get(
            `/v1/projects/life?include=context&asOf=${encodeURIComponent(iso(step.recordedAt))}`,
            key,
          );
          assert.equal(byId.status, 200);
          assert.deepEqual(byId.json().project, step.project);
          assert.deepEqual(contextOf(byId.json()), step.context, `context asOf step ${i}`);
          if (res.status === 200 && res.json().project.id === 'life')
            assert.deepEqual(res.json().project, step.project);
        }
      }
      // Before anything was recorded, and between the pending events and the first sighting.
      assert.equal((await h.get(`/v1/projects/life?asOf=${iso(START)}`, key)).status, 404);
      assert.equal(
        (await h.get(`/v1/projects/life?asOf=${iso(life[firstSighting]!.recordedAt - 1)}`, key)).status,
        404,
      );
      const now = await h.get(`/v1/projects/life?asOf=${iso(Date.now() + 86_400_000)}`, key);
      assert.deepEqual(now.json().project, life[life.length - 1]!.project);

      const bad = await h.get('/v1/projects/life?asOf=yesterday', key);
      assert.equal(bad.status, 400);
      assert.match(bad.json().error.message, /parameter 'asOf'/);
      assert.equal(
        (await h.get('/v1/projects/life?asOf=2026-11-01T00:00:00', key)).status,
        400,
        'an offset is required',
      );
      assert.equal((await h.get(`/v1/projects/nobody?asOf=${iso(Date.now())}`, key)).status, 404);
      assert.equal((await h.get(`/v1/projects/life?asOf=${iso(Date.now())}`)).status, 401);
      // Folding a stream per request is an enriched read: rate protection treats it as protected.
      assert.equal(h.services.projects.isEnriched({ asOf: iso(Date.now()) }), true);
      assert.equal(h.services.projects.isEnriched({}), false);
    } finally {
      await h.close();
      vi.useRealTimers();
    }
  });

  it('lists the writes newest first, with the fields each changed, paged by a cursor bound to the project', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    const h = await createHarness();
    try {
      const key = await h.key('history');
      vi.advanceTimersByTime(STEP_MS);
      const life = await recordLife(h, key);

      // What a consumer of the live read model saw change: consecutive distinct public documents.
      const expected: { writtenAt: string; seq: number; type: string; before: any; after: any }[] = [];
      let previous: any = null;
      for (const step of life) {
        if (step.status !== 200 || JSON.stringify(step.project) === JSON.stringify(previous)) continue;
        expected.push({
          writtenAt: iso(step.recordedAt),
          seq: step.position,
          type: step.type,
          before: previous,
          after: step.project,
        });
        previous = step.project;
      }
      assert.ok(expected.length > 20 && expected.length < life.length, 'some events were not writes');

      const writes: any[] = [];
      let url = '/v1/projects/life/history?limit=7';
      let pages = 0;
      for (;;) {
        const res = await h.get(url, key);
        assert.equal(res.status, 200, res.body);
        const body = res.json();
        assert.ok(
          projectHistorySchema.safeParse(body).success,
          JSON.stringify(projectHistorySchema.safeParse(body).error?.issues?.[0]),
        );
        assert.equal(body.projectId, 'life');
        assert.ok(body.writes.length <= 7);
        writes.push(...body.writes);
        pages += 1;
        if (body.next === null) break;
        url = `/v1/projects/life/history?limit=7&cursor=${body.next}`;
      }
      assert.equal(pages, Math.ceil(expected.length / 7));
      assert.deepEqual(
        writes.map((w) => w.seq),
        expected.map((e) => e.seq).reverse(),
        'newest first, exactly the writes',
      );
      // The newest write is the one the live read model ordered the document by.
      assert.equal(writes[0].seq, life[life.length - 1]!.seq);

      for (const write of writes) {
        const truth = expected.find((e) => e.seq === write.seq)!;
        assert.equal(write.writtenAt, truth.writtenAt);
        assert.equal(write.type, truth.type);
        const changed = Object.keys(truth.after).filter(
          (f) => truth.before === null || JSON.stringify(truth.before[f]) !== JSON.stringify(truth.after[f]),
        );
        assert.deepEqual(
          write.changes.map((c: any) => c.field),
          changed,
        );
        for (const change of write.changes) {
          assert.deepEqual(change.before, truth.before === null ? null : truth.before[change.field]);
          assert.deepEqual(change.after, truth.after[change.field]);
        }
      }
      assert.equal(writes[writes.length - 1].type, 'project.sighted', 'the first write is the first sighting');

      // A default page, a cursor of another project, and bad input.
      const first = (await h.get('/v1/projects/life/history', key)).json();
      assert.equal(first.writes.length, Math.min(20, expected.length));
      await h.append('project.sighted', 'other-1', 'project-other', {
        projectId: 'other',
        at: '2026-10-01T00:00:00Z',
        fol: 1,
      });
      await h.stores.catchUp();
      const otherCursor = (await h.get('/v1/projects/life/history?limit=1', key)).json().next;
      const wrongProject = await h.get(`/v1/projects/other/history?cursor=${otherCursor}`, key);
      assert.equal(wrongProject.status, 400);
      assert.match(wrongProject.json().error.message, /another project's history/);
      assert.equal((await h.get('/v1/projects/life/history?cursor=not-a-cursor', key)).status, 400);
      assert.equal((await h.get('/v1/projects/life/history?limit=0', key)).status, 400);
      assert.equal((await h.get('/v1/projects/life/history?limit=101', key)).status, 400);
      assert.equal((await h.get('/v1/projects/life/history?since=2026-01-01T00:00:00Z', key)).status, 400);
      assert.equal((await h.get('/v1/projects/nobody/history', key)).status, 404);
      assert.equal((await h.get('/v1/projects/life/history')).status, 401);
    } finally {
      await h.close();
      vi.useRealTimers();
    }
  });
});
