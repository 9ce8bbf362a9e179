import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { eventSchemas } from '../../events/catalogue.ts';
import { sourceEventId } from '../../events/ids.ts';
import { sourceTypes, type SourceType } from '../../events/source.ts';
import { fitThesisText, mapMessage } from '../../ingest/map.ts';
import { parseMessage, type SourceMessage } from '../../ingest/messages.ts';
import { callRecordSchema, THESIS_TEXT_MAX } from '../../readmodels/schemas.ts';
import { CALL_ID, example, examples } from './examples.ts';

function validated(message: unknown): SourceMessage {
  const result = parseMessage(message, { followerProvider: 'followerscope' });
  if (!result.ok) throw new Error(`${result.path}: ${result.reason}`);
  return result.message;
}

const expectedStream: Record<SourceType, string> = {
  'project.sighted': 'project-p1',
  'rival.listed': 'project-p1',
  'followers.observed': 'project-p1',
  'dossier.written': 'project-p1',
  'onchain.checked': 'project-p1',
  'calltracker.checked': 'project-p1',
  'vote.cast': 'project-p1',
  'research.updated': 'project-p1',
  'ask.updated': 'project-p1',
  'call.recorded': `call-${CALL_ID}`,
  'call.suppressed': `call-${CALL_ID}`,
  'call.restored': `call-${CALL_ID}`,
  'calls.collected': 'calls-collector',
  'pulse.published': 'pulse-launches',
};

describe('message → events', () => {
  it('puts every type on its stream with the derived id, type, data + at and metadata', () => {
    for (const type of sourceTypes) {
      const message = validated(examples[type]);
      const events = mapMessage(message, 'kafka');
      assert.equal(events.length, 1);
      const [{ stream, event }] = events as [(typeof events)[number]];
      assert.equal(stream, expectedStream[type], type);
      assert.equal(event.id, sourceEventId(type, message.id));
      assert.equal(event.type, type);
      assert.deepEqual(event.metadata, { source: 'kafka', messageId: message.id });
      assert.equal((event.data as { at: string }).at, message.at);
      // The stored data is a valid event of the catalogue.
      const parsed = eventSchemas[type].safeParse(event.data);
      assert.equal(parsed.success, true, `${type}: ${parsed.error?.message ?? ''}`);
    }
  });

  it('derives the same event id for the same message and a different one for another id', () => {
    const a = mapMessage(validated(examples['rival.listed']), 'ndjson')[0]!.event.id;
    const b = mapMessage(validated(examples['rival.listed']), 'kafka')[0]!.event.id;
    const c = mapMessage(validated({ ...examples['rival.listed'], id: 'rival-2' }), 'ndjson')[0]!.event.id;
    assert.equal(a, b);
    assert.notEqual(a, c);
  });

  it('stores handles without the leading @, keeping their case', () => {
    const sighted = mapMessage(validated(examples['project.sighted']), 'ndjson')[0]!.event.data as { handle: string };
    assert.equal(sighted.handle, 'AlphaLabs');
    const observed = mapMessage(validated(examples['followers.observed']), 'ndjson')[0]!.event.data as {
      handle: string;
    };
    assert.equal(observed.handle, 'AlphaLabs');

    const noHandle = example('project.sighted');
    delete noHandle.data.handle;
    const data = mapMessage(validated(noHandle), 'ndjson')[0]!.event.data as Record<string, unknown>;
    assert.equal(Object.hasOwn(data, 'handle'), false, 'an absent handle stays absent');
    noHandle.data.handle = null;
    assert.equal((mapMessage(validated(noHandle), 'ndjson')[0]!.event.data as { handle: unknown }).handle, null);
  });

  it('keeps a thesis of exactly 12,000 characters and shortens a longer one with a note', () => {
    const exact = example('call.recorded');
    exact.data.thesisText = 'a'.repeat(THESIS_TEXT_MAX);
    const kept = mapMessage(validated(exact), 'ndjson')[0]!.event.data as { thesisText: string };
    assert.equal(kept.thesisText, exact.data.thesisText);

    const long = example('call.recorded');
    long.data.thesisText = 'b'.repeat(30_000);
    const stored = mapMessage(validated(long), 'ndjson')[0]!.event.data as { thesisText: string; at: string };
    assert.ok(stored.thesisText.length <= THESIS_TEXT_MAX);
    assert.ok(stored.thesisText.startsWith('b'.repeat(11_000)));
    assert.ok(stored.thesisText.endsWith(`[Shortened: the original post is at ${long.data.sourceUrl}]`));
    assert.equal(callRecordSchema.shape.thesisText.safeParse(stored.thesisText).success, true);
  });

  it('never splits a surrogate pair when shortening', () => {
    const url = 'https://calltracker.example/calls/1';
    const note = `\n\n[Shortened: the original post is at ${url}]`;
    const cut = THESIS_TEXT_MAX - note.length;
    // An emoji straddles the cut point.
    const text = `${'c'.repeat(cut - 1)}🚀${'d'.repeat(500)}`;
    const fitted = fitThesisText(text, url);
    assert.ok(fitted.length <= THESIS_TEXT_MAX);
    assert.equal(fitted, `${'c'.repeat(cut - 1)}${note}`);
    assert.doesNotMatch(fitted, /[\ud800-\udbff](?![\udc00-\udfff])/);
  });

  it('refers to the sourceUrl by name when the URL itself would not fit', () => {
    const url = `https://calltracker.example/${'x'.repeat(12_000)}`;
    const fitted = fitThesisText('e'.repeat(20_000), url);
    assert.ok(fitted.length <= THESIS_TEXT_MAX);
    assert.ok(fitted.endsWith('[Shortened: the original post is at the sourceUrl of this call]'));
  });
});
