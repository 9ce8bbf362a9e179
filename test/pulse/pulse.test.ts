import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { BEATS } from '../../config/beats.ts';
import { BEAT_COUNT } from '../../readmodels/schemas.ts';
import { card, publishCard } from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { createCheckedClient } from '../support/openapi-validator.ts';

describe('GET /v1/pulse and /v1/pulse/{beat}', () => {
  let h: Harness;
  let key: string;
  let client: Awaited<ReturnType<typeof createCheckedClient>>;

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('reader');
    client = await createCheckedClient(h);
  });
  afterAll(() => h.close());

  it('configures exactly eight beats with id, label and blurb', () => {
    assert.equal(BEATS.length, BEAT_COUNT);
    assert.equal(new Set(BEATS.map((b) => b.id)).size, BEAT_COUNT);
  });

  it('lists all eight beats in configured order with card null before anything is published', async () => {
    const body = (await client.get('/v1/pulse', key)).json();
    assert.deepEqual(
      body.beats,
      BEATS.map((b) => ({ id: b.id, label: b.label, blurb: b.blurb, card: null })),
    );
  });

  it('serves the latest card per beat, quiet cards as they are, and null where none', async () => {
    await publishCard(h, card('funding', 1), day(1));
    await publishCard(h, card('funding', 2), day(2));
    await publishCard(h, card('security', 3, 'quiet'), day(2));
    await h.stores.catchUp();
    const body = (await client.get('/v1/pulse', key)).json();
    assert.deepEqual(
      body.beats.map((b: any) => b.id),
      BEATS.map((b) => b.id),
    );
    const byId = new Map(body.beats.map((b: any) => [b.id, b.card]));
    assert.deepEqual(byId.get('funding'), card('funding', 2));
    assert.deepEqual(byId.get('security'), card('security', 3, 'quiet'));
    assert.equal([...byId.values()].filter((c) => c === null).length, 6);

    const one = (await client.get('/v1/pulse/security', key)).json();
    assert.deepEqual(one.beat, { ...BEATS.find((b) => b.id === 'security'), card: card('security', 3, 'quiet') });
    assert.equal(typeof one.readAt, 'string');
    assert.equal((await client.get('/v1/pulse/policy', key)).json().beat.card, null);
  });

  it('answers 404 for an unknown beat, 400 for an over-long one or an unknown parameter, 401 without a key', async () => {
    const unknown = await client.get('/v1/pulse/weather', key);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json().error.code, 'not_found');
    assert.match(unknown.json().error.message, /launches, funding/);
    const long = await client.get(`/v1/pulse/${'b'.repeat(101)}`, key);
    assert.equal(long.status, 400);
    assert.match(long.json().error.message, /'beat'/);
    for (const url of ['/v1/pulse?beat=funding', '/v1/pulse/funding?x=1']) {
      const res = await client.get(url, key);
      assert.equal(res.status, 400);
      assert.match(res.json().error.message, /unknown parameter/);
    }
    assert.equal((await client.get('/v1/pulse')).status, 401);
  });
});
