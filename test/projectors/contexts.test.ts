import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { contextsProjector } from '../../projectors/contexts.ts';
import { foldEvents } from '../../projectors/runner.ts';
import { day, eventFactory } from '../support/events.ts';

describe('contexts projector', () => {
  it('counts one standing vote per voter, flips and withdrawals included', () => {
    const e = eventFactory();
    const vote = (voterId: string, direction: string, at: string) =>
      e('vote.cast', { projectId: 'p', voterId, name: voterId, avatar: null, direction, at });
    const c = foldEvents(contextsProjector, new Map(), [
      vote('a', 'up', day(0)),
      vote('b', 'up', day(1)),
      vote('c', 'down', day(2)),
      vote('a', 'down', day(3)),
      vote('b', 'none', day(4)),
    ]).get('p')!;
    assert.deepEqual(c.doc.votes, { up: 0, down: 2 });
    assert.deepEqual(c.doc.voters.down, [
      { name: 'a', avatar: null },
      { name: 'c', avatar: null },
    ]);
    assert.deepEqual(c.doc.voters.up, []);
  });

  it('lists the 20 most recent voters per side', () => {
    const e = eventFactory();
    const events = Array.from({ length: 25 }, (_, i) =>
      e('vote.cast', { projectId: 'p', voterId: `v${i}`, name: `v${i}`, avatar: null, direction: 'up', at: day(0, i) }),
    );
    const c = foldEvents(contextsProjector, new Map(), events).get('p')!;
    assert.equal(c.doc.votes.up, 25);
    assert.equal(c.doc.voters.up.length, 20);
    assert.equal(c.doc.voters.up[0]!.name, 'v24');
    assert.equal(c.doc.voters.up[19]!.name, 'v5');
  });

  it('starts as not_requested and follows research, dossier, on-chain and call-tracker events', () => {
    const e = eventFactory();
    const fresh = foldEvents(contextsProjector, new Map(), [
      e('vote.cast', { projectId: 'p', voterId: 'x', name: null, avatar: null, direction: 'none', at: day(0) }),
    ]).get('p')!;
    assert.equal(fresh.doc.research.state, 'not_requested');
    const c = foldEvents(contextsProjector, new Map(), [
      e('research.updated', { projectId: 'p', state: 'budget_wait', nextEligibleAt: day(9), at: day(1) }),
      e('calltracker.checked', {
        projectId: 'p',
        status: 'checked_no_match',
        historyComplete: true,
        posts: 0,
        at: day(2),
      }),
      e('onchain.checked', { projectId: 'p', onchain: {}, at: day(3) }),
    ]).get('p')!;
    assert.deepEqual(c.doc.research, { state: 'budget_wait', hasDossier: false, nextEligibleAt: day(9) });
    assert.deepEqual(c.doc.freshness, { dossierAt: null, ggCheckedAt: day(2), onchainCheckedAt: day(3) });
  });
});
