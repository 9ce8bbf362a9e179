/**
 * The call page splices read-time fields (token project links, an aged-out pnl) into each call's
 * stored text: the result is the same bytes as serialising the served value.
 */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import type { StoredCall } from '../../projectors/calls.ts';
import type { CallRecord } from '../../readmodels/schemas.ts';
import { readTimeFieldsOf, servedCallText } from '../../service/call-read-time.ts';
import { makeCall, pnl, token } from '../support/calls-fixtures.ts';

const link = {
  id: 'p"1',
  href: '/projects/p%221',
  name: 'Pé "one"',
  avatar: null,
  bio: 'a\\b\n"tokens":[',
  xHandle: null,
  website: null,
  hasDossier: false,
};

function served(call: StoredCall, keepPnl: boolean, links: (typeof link | null)[]): CallRecord {
  return {
    ...call,
    caller: { ...call.caller, pnl: keepPnl ? call.caller.pnl : null },
    tokens: call.tokens.map((t, i) => ({ ...t, project: links[i] ?? null })),
  };
}

it('spliced text equals JSON.stringify of the served call: links, kept or aged pnl, escapes in the thesis', () => {
  const thesis = 'thesis with "tokens":[ and "pnl":{ inside, \\ back \u2028 and 代币 🦊';
  const call = makeCall(3, {
    createdAt: '2026-10-01T00:00:00.000Z',
    thesis,
    pnl: pnl('2026-09-30T00:00:00.000Z'),
    tokens: [token(1), token(2, { description: '"pnl":null' }), token(3)],
  }) as StoredCall;
  const text = JSON.stringify(call);
  const links = [link, null, link];
  for (const keepPnl of [true, false]) {
    const value = served(call, keepPnl, links);
    let made = 0;
    const out = servedCallText(
      text,
      call,
      value.caller.pnl,
      links.map((l) => JSON.stringify(l)),
      () => {
        made += 1;
        return value;
      },
    );
    assert.equal(out, JSON.stringify(value));
    assert.equal(made, 0, 'the served value is not serialised again');
  }
});

it('a call whose stored text is not what it serialises to falls back to serialising the served value', () => {
  const call = makeCall(4, { createdAt: '2026-10-01T00:00:00.000Z', tokens: 2 }) as StoredCall;
  const value = served(call, true, [null, null]);
  const out = servedCallText(JSON.stringify({ ...call, tokens: [] }), call, null, ['null', 'null'], () => value);
  assert.equal(out, JSON.stringify(value));
});

it('the tokens and pnl are read from their own slices of the stored text, whatever the thesis and descriptions hold', () => {
  const thesis = 'a thesis with "tokens":[{"x":1}] and "pnl":{"y":2} and ] } [ { \\" inside';
  for (const p of [pnl('2026-09-30T00:00:00.000Z'), null]) {
    const call = makeCall(5, {
      createdAt: '2026-10-01T00:00:00.000Z',
      thesis,
      pnl: p,
      tokens: [token(1, { description: '] } "pnl":null [' }), token(2)],
    }) as StoredCall;
    assert.deepEqual(readTimeFieldsOf(JSON.stringify(call)), { tokens: call.tokens, caller: { pnl: call.caller.pnl } });
  }
  assert.equal(readTimeFieldsOf('{"id":"x"}'), null, 'not a call: parsed whole instead');
});
