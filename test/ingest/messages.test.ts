import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { sourceTypes } from '../../events/source.ts';
import { parseRawMessage, WHOLE_MESSAGE } from '../../ingest/messages.ts';
import { example, examples, line, THESIS } from './examples.ts';

const rules = { followerProvider: 'followerscope' };

function rejection(raw: string): { path: string; reason: string } {
  const result = parseRawMessage(raw, rules);
  assert.equal(result.ok, false, `expected a rejection for ${raw.slice(0, 120)}`);
  if (result.ok) throw new Error('unreachable');
  return { path: result.path, reason: result.reason };
}

describe('source messages', () => {
  it('accepts a valid message of every type', () => {
    assert.deepEqual(Object.keys(examples).sort(), [...sourceTypes].sort());
    for (const type of sourceTypes) {
      const result = parseRawMessage(line(examples[type]), rules);
      assert.equal(result.ok, true, `${type}: ${result.ok ? '' : `${result.path}: ${result.reason}`}`);
      if (result.ok) {
        assert.equal(result.message.type, type);
        assert.deepEqual(result.message.data, examples[type].data);
      }
    }
  });

  it('keeps absent fields absent and nulls null', () => {
    const message = example('project.sighted');
    delete message.data.handle;
    message.data.bio = null;
    const result = parseRawMessage(line(message), rules);
    assert.ok(result.ok);
    assert.equal(Object.hasOwn(result.message.data, 'handle'), false);
    assert.equal((result.message.data as { bio: unknown }).bio, null);
  });

  it('rejects an unknown field, naming its full path', () => {
    const top = example('project.sighted') as unknown as { data: Record<string, unknown> };
    top.data['followers'] = 3;
    assert.deepEqual(rejection(line(top)), { path: 'data.followers', reason: 'unknown field' });

    const nested = example('dossier.written') as unknown as { data: { dossier: { links: Record<string, unknown> } } };
    nested.data.dossier.links['twitter'] = 'https://x.com/a';
    assert.deepEqual(rejection(line(nested)), { path: 'data.dossier.links.twitter', reason: 'unknown field' });

    const envelope = { ...example('rival.listed'), partition: 3 };
    assert.deepEqual(rejection(line(envelope)), { path: 'partition', reason: 'unknown field' });
  });

  it('rejects a wrong type, naming the path and what was expected', () => {
    const message = example('dossier.written') as unknown as { data: { dossier: { links: { site: unknown } } } };
    message.data.dossier.links.site = 42;
    const { path, reason } = rejection(line(message));
    assert.equal(path, 'data.dossier.links.site');
    assert.match(reason, /expected string/);

    const fol = example('project.sighted') as unknown as { data: { fol: unknown } };
    fol.data.fol = '1200';
    assert.equal(rejection(line(fol)).path, 'data.fol');
  });

  it('rejects a missing required field', () => {
    const message = example('vote.cast') as unknown as { data: Record<string, unknown> };
    delete message.data['direction'];
    const { path, reason } = rejection(line(message));
    assert.equal(path, 'data.direction');
    assert.match(reason, /required field is missing/);

    const noData = example('rival.listed') as unknown as Record<string, unknown>;
    delete noData['data'];
    assert.deepEqual(rejection(line(noData)), { path: 'data', reason: 'required field is missing (expected object)' });

    const noName = example('dossier.written') as unknown as { data: { dossier: Record<string, unknown> } };
    delete noName.data.dossier['name'];
    assert.deepEqual(rejection(line(noName)), {
      path: 'data.dossier.name',
      reason: 'required field is missing (expected string)',
    });

    const noId = example('rival.listed') as unknown as Record<string, unknown>;
    delete noId['id'];
    assert.equal(rejection(line(noId)).path, 'id');
  });

  it('checks the envelope: id length, at format', () => {
    assert.equal(rejection(line({ ...example('rival.listed'), id: '' })).path, 'id');
    assert.equal(rejection(line({ ...example('rival.listed'), id: 'x'.repeat(201) })).path, 'id');
    assert.equal(parseRawMessage(line({ ...example('rival.listed'), id: 'x'.repeat(200) }), rules).ok, true);
    const badAt = rejection(line({ ...example('rival.listed'), at: '20 Nov 2026' }));
    assert.equal(badAt.path, 'at');
    assert.match(badAt.reason, /datetime/i);
  });

  it('applies the calltracker posts rule', () => {
    for (const status of ['identity_unknown', 'identity_mismatch'] as const) {
      const message = example('calltracker.checked');
      message.data = { projectId: 'p1', status, historyComplete: false, posts: 2 };
      const { path, reason } = rejection(line(message));
      assert.equal(path, 'data.posts');
      assert.match(reason, /must be null/);
      message.data.posts = null;
      assert.equal(parseRawMessage(line(message), rules).ok, true);
    }
    const noMatch = example('calltracker.checked');
    noMatch.data = { projectId: 'p1', status: 'checked_no_match', historyComplete: true, posts: null };
    const { path, reason } = rejection(line(noMatch));
    assert.equal(path, 'data.posts');
    assert.match(reason, /must be 0/);
    noMatch.data.posts = 0;
    assert.equal(parseRawMessage(line(noMatch), rules).ok, true);
  });

  it('requires the configured follower provider', () => {
    const message = example('followers.observed');
    message.data.source = 'someone-else';
    const { path, reason } = rejection(line(message));
    assert.equal(path, 'data.source');
    assert.match(reason, /followerscope/);

    const other = parseRawMessage(line(example('followers.observed')), { followerProvider: 'otherprovider' });
    assert.equal(other.ok, false);
    message.data.source = 'otherprovider';
    assert.equal(parseRawMessage(line(message), { followerProvider: 'otherprovider' }).ok, true);
  });

  it('requires a configured beat', () => {
    const message = example('pulse.published');
    message.data.card.beat = 'weather';
    const { path, reason } = rejection(line(message));
    assert.equal(path, 'data.card.beat');
    assert.match(reason, /configured beat/);
  });

  it('rejects an empty handle (null is the way to say none)', () => {
    const message = example('project.sighted');
    message.data.handle = '@';
    assert.equal(rejection(line(message)).path, 'data.handle');
    message.data.handle = null;
    assert.equal(parseRawMessage(line(message), rules).ok, true);
  });

  it('rejects invalid JSON and non-objects as a whole', () => {
    const broken = rejection('{"type": "rival.listed", "id": ');
    assert.equal(broken.path, WHOLE_MESSAGE);
    assert.match(broken.reason, /not valid JSON/);
    assert.equal(rejection('[1,2]').path, WHOLE_MESSAGE);
    assert.equal(rejection('null').path, WHOLE_MESSAGE);
    assert.equal(rejection('"text"').path, WHOLE_MESSAGE);
  });

  it('rejects an unknown type', () => {
    const { path, reason } = rejection(line({ ...example('rival.listed'), type: 'rival.delisted' }));
    assert.equal(path, 'type');
    assert.match(reason, /unknown message type "rival\.delisted"/);
    assert.equal(rejection(line({ ...example('rival.listed'), type: 7 })).path, 'type');
  });

  it('never quotes thesis text in a reason', () => {
    const broken = example('call.recorded');
    broken.data.caller.profileUrl = 'not a url';
    assert.equal(rejection(line(broken)).path, 'data.caller.profileUrl');
    assert.doesNotMatch(rejection(line(broken)).reason, /Private thesis/);

    const wrongType = example('call.recorded') as unknown as { data: { thesisText: unknown } };
    wrongType.data.thesisText = [THESIS];
    assert.doesNotMatch(JSON.stringify(rejection(line(wrongType))), /Private thesis/);

    const huge = example('call.recorded');
    huge.data.thesisText = `${THESIS} `.repeat(20_000);
    const tooLong = rejection(line(huge));
    assert.equal(tooLong.path, 'data.thesisText');
    assert.doesNotMatch(tooLong.reason, /Private thesis/);

    const notJson = rejection(`{"type":"call.recorded","data":{"thesisText":"${THESIS}" oops`);
    assert.doesNotMatch(notJson.reason, /Private thesis/);
  });
});
