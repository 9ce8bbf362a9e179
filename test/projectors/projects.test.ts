import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { foldEvents } from '../../projectors/runner.ts';
import {
  foldProject,
  projectKeys,
  projectsProjector,
  rivalLead,
  PROJECT_FACETS,
  type ProjectEntity,
} from '../../projectors/projects.ts';
import type { RecordedEvent } from '../../eventstore/port.ts';
import type { StoredDoc } from '../../readmodels/port.ts';
import { projectSchema, type Project } from '../../readmodels/schemas.ts';
import { day, eventFactory } from '../support/events.ts';
import { generatedLogEvents } from '../support/seed.ts';

function fold(events: RecordedEvent[], existing = new Map<string, StoredDoc<Project, never>>()) {
  const out = foldEvents(projectsProjector, existing as never, events);
  return out;
}

const dossier = {
  name: 'Alpha',
  category: 'defi',
  description: 'd',
  stage: 'live',
  confidence: 'high',
  chains: ['base'],
  founders: [{ name: 'A', handle: null, note: null }],
  backers: [],
  notable: [],
  token: { ticker: 'ALP', contract: '0xAbC0000000000000000000000000000000000001', chain: 'base' },
  links: { site: 'https://www.Alpha.xyz/home', docs: null, github: null },
  unverified: [],
  onchain: null,
};
const onchain = {
  symbol: 'ALP',
  mcap: 1,
  holders: 2,
  liquidity: 3,
  change24h: -0.1,
  buys24h: 4,
  sells24h: 5,
  top10Rate: 0.5,
  mintRenounced: true,
  lpLocked: false,
  honeypot: null,
};

describe('projects projector', () => {
  it('sets firstSeenByUs and entry from the first sighting and updates fields from later ones', () => {
    const e = eventFactory();
    const docs = fold([
      e('project.sighted', { projectId: 'p1', at: day(0), handle: '@Alpha', fol: 100, name: 'Alpha' }),
      e('project.sighted', { projectId: 'p1', at: day(2), fol: 150, bio: 'hello' }),
    ]);
    const p = docs.get('p1')!;
    assert.equal(p.doc.firstSeenByUs, day(0));
    assert.deepEqual(p.doc.entry, { at: day(0), fol: 100 });
    assert.equal(p.doc.handle, 'Alpha');
    assert.equal(p.doc.name, 'Alpha');
    assert.equal(p.doc.bio, 'hello');
    assert.equal(p.doc.fol, 150);
    assert.equal(p.facet, PROJECT_FACETS.noDossier);
    assert.deepEqual(p.keys.handle, ['alpha']);
    assert.ok(projectSchema.safeParse(p.doc).success);
    // Every field present, unknowns null.
    assert.equal(p.doc.identity, null);
    assert.equal(p.doc.followerStats, null);
    assert.equal(p.doc.dossier, null);
    assert.equal(p.doc.calltracker, null);
  });

  it('lets an older sighting feed the follower history only, never the current fields', () => {
    const e = eventFactory();
    const docs = fold([
      e('project.sighted', { projectId: 'p1', at: day(8), fol: 400, name: 'New' }),
      e('project.sighted', { projectId: 'p1', at: day(1), fol: 150, name: 'Old' }),
      e('project.sighted', { projectId: 'p1', at: day(6, 12), fol: 280 }),
    ]);
    const p = docs.get('p1')!;
    assert.equal(p.doc.name, 'New');
    assert.equal(p.doc.fol, 400);
    // h24: 400 minus the latest sample at or before day 7 (day 6.5: 280); d7: minus the one at or before day 1 (150).
    assert.deepEqual(p.doc.vel, { h24: 120, d7: 250 });
    // The earliest sighting is when the project first reached the board.
    assert.equal(p.doc.firstSeenByUs, day(1));
    assert.deepEqual(p.doc.entry, { at: day(1), fol: 150 });
  });

  it('leaves vel null when no sample is old enough', () => {
    const e = eventFactory();
    const p = fold([
      e('project.sighted', { projectId: 'p1', at: day(0), fol: 10 }),
      e('project.sighted', { projectId: 'p1', at: day(0, 12), fol: 20 }),
    ]).get('p1')!;
    assert.deepEqual(p.doc.vel, { h24: null, d7: null });
  });

  it('computes rival.lead from the earliest listing only when the board was first', () => {
    const e = eventFactory();
    const ahead = fold([
      e('project.sighted', { projectId: 'a', at: day(0) }),
      e('rival.listed', { projectId: 'a', at: day(2, 3) }),
      e('rival.listed', { projectId: 'a', at: day(5) }),
    ]).get('a')!;
    assert.equal(ahead.doc.rival.lead, 'P2DT3H');
    const behind = fold([
      e('rival.listed', { projectId: 'b', at: day(0) }),
      e('project.sighted', { projectId: 'b', at: day(1) }),
    ]).get('b')!;
    assert.equal(behind.doc.rival.lead, null);
  });

  it('keeps the follower observation with the latest checkedAt not later than its message time', () => {
    const e = eventFactory();
    const base = { projectId: 'p', source: 'followerscope', handle: '@p' };
    const p = fold([
      e('project.sighted', { projectId: 'p', at: day(0) }),
      e('followers.observed', { ...base, value: 10, checkedAt: day(1), at: day(1) }),
      e('followers.observed', { ...base, value: 99, checkedAt: day(9), at: day(2) }),
      e('followers.observed', { ...base, value: 5, checkedAt: day(0, 1), at: day(3) }),
    ]).get('p')!;
    assert.deepEqual(p.doc.followerStats, { source: 'followerscope', handle: 'p', value: 10, checkedAt: day(1) });
  });

  it('publishes first-call fields and multiple only for complete history', () => {
    const e = eventFactory();
    const base = {
      projectId: 'p',
      status: 'matched',
      posts: 4,
      firstAt: day(1),
      firstMcap: 200,
      firstCaller: 'caller',
      latestAt: day(3),
      mcap: 50,
    };
    const incomplete = fold([
      e('project.sighted', { projectId: 'p', at: day(0) }),
      e('calltracker.checked', { ...base, historyComplete: false, at: day(4) }),
    ]).get('p')!;
    assert.deepEqual(incomplete.doc.calltracker, {
      status: 'matched',
      historyComplete: false,
      posts: 4,
      firstAt: null,
      firstMcap: null,
      firstCaller: null,
      latestAt: day(3),
      mcap: 50,
      multiple: null,
      checkedAt: day(4),
    });
    const complete = fold([
      e('project.sighted', { projectId: 'p', at: day(0) }),
      e('calltracker.checked', { ...base, historyComplete: true, at: day(4) }),
    ]).get('p')!;
    assert.equal(complete.doc.calltracker?.multiple, 0.25);
    assert.equal(complete.doc.calltracker?.firstCaller, 'caller');
  });

  it('replaces the dossier, applies on-chain checks only to an existing dossier, and indexes its token and site', () => {
    const e = eventFactory();
    const p = fold([
      e('project.sighted', { projectId: 'p', at: day(0) }),
      e('onchain.checked', { projectId: 'p', onchain, at: day(1) }),
      e('dossier.written', { projectId: 'p', dossier, at: day(2) }),
    ]).get('p')!;
    assert.equal(p.doc.dossier?.onchain, null);
    assert.equal(p.facet, PROJECT_FACETS.dossier);
    assert.deepEqual(p.keys.chainContract, ['base:0xabc0000000000000000000000000000000000001']);
    assert.deepEqual(p.keys.website, ['alpha.xyz']);
    const later = fold(
      [e('onchain.checked', { projectId: 'p', onchain, at: day(3) })],
      new Map([['p', p as never]]),
    ).get('p')!;
    assert.deepEqual(later.doc.dossier?.onchain, onchain);
  });

  it('keeps a project pending until its first sighting', () => {
    const e = eventFactory();
    const p = fold([e('dossier.written', { projectId: 'p', dossier, at: day(0) })]).get('p')!;
    assert.equal(p.facet, PROJECT_FACETS.pending);
  });

  it('writes (new seq and writtenAt) only when the public document changes', () => {
    const e = eventFactory();
    const first = fold([e('project.sighted', { projectId: 'p', at: day(5), fol: 10, name: 'n' })]).get('p')!;
    // The same sighting again changes nothing (document, state, keys): nothing to write at all.
    assert.equal(
      fold(
        [e('project.sighted', { projectId: 'p', at: day(5), fol: 10, name: 'n' })],
        new Map([['p', first as never]]),
      ).has('p'),
      false,
    );
    // A rival listed before our first sighting changes the state but not the document (no lead): written, seq kept.
    const same = fold([e('rival.listed', { projectId: 'p', at: day(1) })], new Map([['p', first as never]])).get('p')!;
    assert.equal(same.seq, first.seq);
    assert.equal(same.writtenAt, first.writtenAt);
    assert.equal(same.json, first.json);
    assert.notDeepEqual(same.state, first.state);
    const refreshed = fold(
      [e('project.sighted', { projectId: 'p', at: day(5, 1), fol: 11 })],
      new Map([['p', same as never]]),
    ).get('p')!;
    assert.notEqual(refreshed.seq, first.seq);
    assert.equal(refreshed.doc.fol, 11);
  });
});

describe('projects projector: derived fields taken over from the entity before', () => {
  // The fold makes sortKey, keys and rival again only when the fields they come from changed; over a
  // generated history (handles, identities, dossiers, rivals changing), every result must equal what
  // making them from scratch gives, whether `current` is the previous fold's own result or a copy read
  // back from the store (a batch boundary: new objects, no memo).
  it('equal a fresh derivation after every event', async () => {
    const events = await generatedLogEvents(
      { projects: 80, seed: 4, calls: 60, days: 20, hotContractCalls: 0, followerProvider: 'followerscope' },
      projectsProjector.typePrefixes,
    );
    const entities = new Map<string, ProjectEntity>();
    let folds = 0;
    let keyChanges = 0;
    for (const event of events) {
      const id = projectsProjector.keyOf(event);
      if (id === null) continue;
      let current = entities.get(id) ?? null;
      if (current && event.position % 3 === 0) current = JSON.parse(JSON.stringify(current)) as ProjectEntity;
      const next = foldProject(current, event);
      folds += 1;
      if (current && JSON.stringify(current.keys) !== JSON.stringify(next.keys)) keyChanges += 1;
      assert.equal(next.sortKey, new Date(next.doc.firstSeenByUs).toISOString());
      assert.deepEqual(next.keys, next.state.firstSeenAt !== null ? projectKeys(next.doc) : {});
      assert.deepEqual(next.doc.rival, { lead: rivalLead(next.state.firstSeenAt, next.state.rivalListedAt) });
      entities.set(id, next);
    }
    assert.ok(folds > 1000, `folded ${folds} events`);
    assert.ok(keyChanges >= 20, `keys changed ${keyChanges} times`);
  });

  it("the samples' instants, parsed once and kept beside the samples, change no fold: folds from copies read back agree", async () => {
    const events = await generatedLogEvents(
      { projects: 40, seed: 9, calls: 20, days: 20, hotContractCalls: 0, followerProvider: 'followerscope' },
      projectsProjector.typePrefixes,
    );
    const inMemory = new Map<string, ProjectEntity>();
    const readBack = new Map<string, ProjectEntity>();
    for (const event of events) {
      const id = projectsProjector.keyOf(event);
      if (id === null) continue;
      inMemory.set(id, foldProject(inMemory.get(id) ?? null, event));
      const stored = readBack.get(id);
      readBack.set(id, foldProject(stored ? (JSON.parse(JSON.stringify(stored)) as ProjectEntity) : null, event));
    }
    let samples = 0;
    for (const [id, entity] of inMemory) {
      const text = JSON.stringify(entity);
      assert.equal(text, JSON.stringify(readBack.get(id)), id);
      for (const sample of (JSON.parse(text) as ProjectEntity).state.samples) {
        assert.deepEqual(Object.keys(sample), ['at', 'fol']);
        samples += 1;
      }
    }
    assert.ok(samples > 100, `${samples} samples`);
  });
});
