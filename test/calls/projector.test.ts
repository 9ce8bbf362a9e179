import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import {
  CALL_FACETS,
  callIndexProjector,
  callsCollectorProjector,
  callsProjector,
  callSortKey,
  shortenThesis,
  tokenChain,
  type StoredCall,
} from '../../projectors/calls.ts';
import { pulseProjector } from '../../projectors/pulse.ts';
import { foldEvents } from '../../projectors/runner.ts';
import { THESIS_TEXT_MAX, callRecordSchema } from '../../readmodels/schemas.ts';
import { callId, card, makeCall, thesisText, token } from '../support/calls-fixtures.ts';
import { day, eventFactory } from '../support/events.ts';

const fold = (events: ReturnType<ReturnType<typeof eventFactory>>[]) =>
  foldEvents(callsProjector as never, new Map(), events) as Map<string, any>;

describe('calls projector', () => {
  it('stores a recorded call without project links, keyed by lower-case id, sorted by createdAt in UTC', () => {
    const e = eventFactory();
    const call = makeCall(1, { createdAt: '2026-10-01T12:00:00+02:00', tokens: 2 });
    const docs = fold([e('call.recorded', { ...call, id: call.id.toUpperCase(), at: day(0) })]);
    const stored = docs.get(call.id)!;
    assert.equal(stored.facet, CALL_FACETS.visible);
    assert.equal(stored.sortKey, '2026-10-01T10:00:00.000Z');
    assert.equal(stored.doc.id, call.id.toUpperCase(), 'the record keeps the id as sent');
    assert.ok(stored.doc.tokens.every((t: object) => !('project' in t)));
    assert.ok(!('at' in stored.doc));
    // With links added at read time it is a valid call record.
    assert.ok(
      callRecordSchema.safeParse({
        ...stored.doc,
        tokens: stored.doc.tokens.map((t: object) => ({ ...t, project: null })),
      }).success,
    );
  });

  it('indexes every token by contract and chain:contract through the chain table, in a payload-free index', () => {
    const e = eventFactory();
    const call = makeCall(2, {
      createdAt: day(1),
      tokens: [
        token(0, { chain: 'ETH', key: 'eth', contract: '0xAbCdEf0000000000000000000000000000000001' }),
        token(1, { chain: 'Solana', key: 'sol', contract: 'So11111111111111111111111111111111111111112' }),
        token(2, { chain: 'Ethereum Mainnet', key: 'arb', contract: '0xAbCdEf0000000000000000000000000000000001' }),
      ],
    });
    const recorded = e('call.recorded', { ...call, at: day(1) });
    assert.deepEqual(fold([recorded]).get(call.id)!.keys, {}, 'the payload collection is read by id only');
    const stored = (foldEvents(callIndexProjector as never, new Map(), [recorded]) as Map<string, any>).get(call.id)!;
    assert.deepEqual(stored.doc, { createdAt: call.createdAt });
    assert.equal(stored.sortKey, callSortKey(call.createdAt));
    assert.deepEqual(stored.keys.contract, [
      '0xabcdef0000000000000000000000000000000001',
      'So11111111111111111111111111111111111111112',
    ]);
    assert.deepEqual(stored.keys.chainContract, [
      'arbitrum:0xabcdef0000000000000000000000000000000001',
      'ethereum:0xabcdef0000000000000000000000000000000001',
      'solana:So11111111111111111111111111111111111111112',
    ]);
    assert.equal(
      tokenChain({ chain: 'Ethereum Mainnet', key: 'arb' }),
      'arbitrum',
      'an unknown chain name falls back to a known key',
    );
    assert.equal(tokenChain({ chain: 'sui', key: 'x' }), 'sui', 'an unknown chain stays itself, lower-cased');
  });

  it('replaces the record on an edit and keeps a suppression across it; restore flips the facet back', () => {
    const e = eventFactory();
    const first = makeCall(3, { createdAt: day(2), thesis: 'first' });
    const edited = { ...makeCall(3, { createdAt: day(2), updatedAt: day(3), thesis: 'second', tokens: 3 }) };
    const docs = fold([
      e('call.recorded', { ...first, at: day(2) }),
      e('call.suppressed', { callId: first.id, at: day(2, 1) }),
      e('call.recorded', { ...edited, at: day(3) }),
    ]);
    const stored = docs.get(first.id)!;
    assert.equal(stored.facet, CALL_FACETS.suppressed);
    assert.equal((stored.doc as StoredCall).thesisText, 'second');
    assert.equal((stored.doc as StoredCall).tokens.length, 3);
    const restored = foldEvents(callsProjector as never, docs as never, [
      eventFactory(10)('call.restored', { callId: first.id.toUpperCase(), at: day(4) }),
    ]);
    assert.equal((restored.get(first.id) as any).facet, CALL_FACETS.visible);
    // The index follows the same facets and keeps the keys of the latest edit.
    const e2 = eventFactory();
    const index = foldEvents(callIndexProjector as never, new Map(), [
      e2('call.recorded', { ...first, at: day(2) }),
      e2('call.suppressed', { callId: first.id, at: day(2, 1) }),
      e2('call.recorded', { ...edited, at: day(3) }),
    ]) as Map<string, any>;
    assert.equal(index.get(first.id).facet, CALL_FACETS.suppressed);
    assert.equal(index.get(first.id).keys.contract.length, 3);
    const indexRestored = foldEvents(callIndexProjector as never, index as never, [
      eventFactory(10)('call.restored', { callId: first.id, at: day(4) }),
    ]) as Map<string, any>;
    assert.equal(indexRestored.get(first.id).facet, CALL_FACETS.visible);
    assert.equal(indexRestored.get(first.id).keys.contract.length, 3);
  });

  it('remembers a suppression that arrives before its call and applies it when the call is recorded', () => {
    const e = eventFactory();
    const id = callId(4);
    const docs = fold([e('call.suppressed', { callId: id, at: day(1) })]);
    assert.equal(docs.get(id)!.facet, CALL_FACETS.pending);
    assert.equal(docs.get(id)!.doc, null);
    const later = foldEvents(callsProjector as never, docs as never, [
      eventFactory(5)('call.recorded', { ...makeCall(4, { createdAt: day(2) }), at: day(2) }),
    ]);
    assert.equal((later.get(id) as any).facet, CALL_FACETS.suppressed);
  });

  it('shortens a thesis over 12,000 characters with an explicit note naming the source, never splitting a surrogate pair', () => {
    const url = 'https://calltracker.example/calls/9';
    const long = thesisText(20_000, 9);
    const short = shortenThesis(long, url);
    assert.ok(short.length <= THESIS_TEXT_MAX);
    assert.ok(short.endsWith(`the full text is at ${url}]`));
    assert.ok(long.startsWith(short.slice(0, short.indexOf('\n\n[Shortened'))));
    const exact = thesisText(THESIS_TEXT_MAX, 10);
    assert.equal(shortenThesis(exact, url), exact, 'a text at the limit is kept whole');
    // Notes of odd and even length: in one of them a pair straddles the cut point and is dropped whole.
    const emoji = '🚀'.repeat(7000);
    const steppedBack = [url, `${url}0`].map((u) => {
      const cut = shortenThesis(emoji, u);
      assert.ok(cut.length <= THESIS_TEXT_MAX);
      const body = cut.slice(0, cut.indexOf('\n\n[Shortened'));
      assert.ok(/^(?:🚀)+$/u.test(body));
      const noteLength = cut.length - body.length;
      return body.length === THESIS_TEXT_MAX - noteLength - 1;
    });
    assert.deepEqual(steppedBack.filter(Boolean).length, 1, 'exactly one of the two cut points fell inside a pair');
    const e = eventFactory();
    const call = makeCall(9, { createdAt: day(1), thesis: long });
    assert.equal(fold([e('call.recorded', { ...call, at: day(1) })]).get(call.id)!.doc.thesisText, short);
  });

  it('normalizes createdAt offsets and precisions into one sortable key', () => {
    assert.equal(callSortKey('2026-10-01T00:00:00Z'), '2026-10-01T00:00:00.000Z');
    assert.equal(callSortKey('2026-10-01T01:30:00.5+01:30'), '2026-10-01T00:00:00.500Z');
    assert.ok(callSortKey('2026-10-01T00:00:00.010Z') > callSortKey('2026-10-01T00:00:00.002Z'));
  });
});

describe('calls collector projector', () => {
  it('keeps the report with the latest source time, whatever order they arrive in', () => {
    const e = eventFactory();
    const fresh = { checkedAt: day(5), completeAt: day(4), lastAttemptComplete: false };
    const stale = { checkedAt: day(1), completeAt: day(1), lastAttemptComplete: true };
    const docs = foldEvents(callsCollectorProjector as never, new Map(), [
      e('calls.collected', { ...fresh, at: day(5) }),
      e('calls.collected', { ...stale, at: day(1) }),
    ]) as Map<string, any>;
    assert.deepEqual(docs.get('collector').doc, fresh);
  });
});

describe('pulse projector', () => {
  it('keeps the latest card per configured beat and skips cards of unknown beats', () => {
    const e = eventFactory();
    const docs = foldEvents(pulseProjector as never, new Map(), [
      e('pulse.published', { card: card('funding', 1), at: day(1) }),
      e('pulse.published', { card: card('funding', 2, 'quiet'), at: day(2) }),
      e('pulse.published', { card: { ...card('funding', 3), beat: 'weather' }, at: day(3) }),
    ]) as Map<string, any>;
    assert.deepEqual([...docs.keys()], ['funding']);
    assert.deepEqual(docs.get('funding').doc, card('funding', 2, 'quiet'));
  });
});
