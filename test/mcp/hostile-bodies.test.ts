import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { seedBoard } from './support.ts';

/** The keys that poison a prototype, written out and with `\u` escapes (JSON reads both as the same key). */
const POISONS = [
  ['__proto__', '{"__proto__":{"polluted":true}}'],
  ['escaped __proto__', '{"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":true}}'],
  ['constructor.prototype', '{"constructor":{"prototype":{"polluted":true}}}'],
  ['escaped constructor.prototype', '{"\\u0063onstructor":{"\\u0070rototype":{"polluted":true}}}'],
] as const;

/** A tool call that would append an ask, its arguments carrying `poison`'s key beside real ones. */
const poisonedAsk = (poison: string) =>
  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_researcher","arguments":{"handle":"h1","question":"Poisoned?",${poison.slice(1, -1)}}}}`;

describe('hostile bodies: one parser, with the prototype-poisoning checks on', () => {
  let h: Harness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_THESIS_FEED: 'on' }, now: () => new Date('2026-11-20T08:00:00.000Z') });
    key = await h.key('hostile', ['allow']);
    await seedBoard(h);
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  const post = (path: string, body: string, extra: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...extra,
      },
      body,
    });

  for (const [name, poison] of POISONS) {
    it(`/mcp refuses a body with ${name} with the 400 REST gives, and appends nothing`, async () => {
      const asksBefore = (await h.get('/v1/projects/h1/ask', key)).body;
      const res = await post('/mcp', poisonedAsk(poison));
      assert.equal(res.status, 400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'bad_request');
      assert.match(body.error.message, /not accepted \(__proto__, or constructor with prototype\)/);
      assert.equal((await h.get('/v1/projects/h1/ask', key)).body, asksBefore, 'no ask was appended');
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
    });

    it(`POST /v1/thesisfeed/theses refuses a body with ${name} in the error envelope, and requests nothing`, async () => {
      const contract = `0x${'b'.repeat(40)}`;
      const statusBefore = (await h.get(`/v1/thesisfeed/theses?contract=${contract}`, key)).body;
      const res = await post('/v1/thesisfeed/theses', `{"contract":"${contract}",${poison.slice(1, -1)}}`);
      assert.equal(res.status, 400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'bad_request');
      assert.equal(
        (await h.get(`/v1/thesisfeed/theses?contract=${contract}`, key)).body,
        statusBefore,
        'nothing was requested',
      );
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }

  it('the same bodies without the poisoned key are served (the refusal is the key, not the shape)', async () => {
    const res = await post('/mcp', poisonedAsk('{"note":{"polluted":true}}'));
    assert.equal(res.status, 200);
    const text = await res.text();
    // ask_researcher's schema is strict: the unknown argument is a tool error, not a parse error.
    assert.match(text, /unknown parameter 'note'/);
  });
});
