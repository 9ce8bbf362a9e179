import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { CALL_INDEX_COLLECTION, CALLS_COLLECTION } from '../../projectors/calls.ts';
import { callId, makeCall, recordCall, token } from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { createCheckedClient } from '../support/openapi-validator.ts';

const A = '0x00000000000000000000000000000000000000aa';
const B = '0x00000000000000000000000000000000000000bb';

describe('contract filter candidates (at most 5000)', () => {
  let h: Harness;
  let key: string;
  let client: Awaited<ReturnType<typeof createCheckedClient>>;
  const payloadReads: string[] = [];

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('reader');
    // A on 5001 calls, B on 5000 of them (not on call 0).
    for (let n = 0; n < 5001; n++) {
      const tokens = [token(0, { chain: 'base', contract: A })];
      if (n > 0) tokens.push(token(1, { chain: 'base', contract: B }));
      await recordCall(h, makeCall(n, { createdAt: day(0, n / 60), tokens }));
    }
    await h.stores.catchUp();
    client = await createCheckedClient(h);
    // Record which reads touch call payloads.
    const store = h.stores.store;
    const getMany = store.getMany.bind(store);
    const listKeyset = store.listKeyset.bind(store);
    const get = store.get.bind(store);
    store.getMany = (collection, ids) => {
      if (collection === CALLS_COLLECTION || collection === CALL_INDEX_COLLECTION)
        payloadReads.push(`${collection}:${ids.length}`);
      return getMany(collection, ids);
    };
    store.listKeyset = (collection, query) => {
      if (collection === CALLS_COLLECTION) payloadReads.push('listKeyset');
      return listKeyset(collection, query);
    };
    store.get = (collection, id) => {
      if (collection === CALLS_COLLECTION) payloadReads.push('get');
      return get(collection, id);
    };
  });
  afterAll(() => h.close());

  it('refuses a contract present in more than 5000 calls with 400, before reading any call payload or index entry', async () => {
    payloadReads.length = 0;
    for (const url of [
      `/v1/calltracker/calls?contract=${A}`,
      `/v1/calltracker/calls?contract=${A.toUpperCase().replace('0X', '0x')}&chain=base`,
    ]) {
      const res = await client.get(url, key);
      assert.equal(res.status, 400);
      assert.equal(res.json().error.code, 'bad_request');
      assert.match(res.json().error.message, /matches more than 5000 calls/);
    }
    assert.deepEqual(payloadReads, []);
  });

  it('serves a contract present in exactly 5000 calls, newest first, and pages through them', async () => {
    payloadReads.length = 0;
    const seen = new Set<string>();
    let next: string | null = null;
    let pages = 0;
    do {
      const res = await client.get(`/v1/calltracker/calls?contract=${B}&limit=30${next ? `&cursor=${next}` : ''}`, key);
      assert.equal(res.status, 200);
      const page = res.json();
      if (pages === 0)
        assert.deepEqual(
          page.calls.slice(0, 2).map((c: any) => c.id),
          [callId(5000), callId(4999)],
        );
      for (const c of page.calls) {
        assert.ok(!seen.has(c.id), `${c.id} served twice`);
        seen.add(c.id);
      }
      next = page.next;
      pages += 1;
    } while (next !== null);
    assert.equal(seen.size, 5000);
    assert.ok(!seen.has(callId(0)));
    assert.equal(pages, Math.ceil(5000 / 30));
    // Per page: the 5000 index entries, then only the payloads of the page (limit + 1).
    assert.equal(payloadReads.length, 2 * pages);
    for (let i = 0; i < pages; i++) {
      assert.equal(payloadReads[2 * i], `${CALL_INDEX_COLLECTION}:5000`);
      assert.equal(payloadReads[2 * i + 1], `${CALLS_COLLECTION}:${Math.min(31, 5000 - 30 * i)}`);
    }
  });
});
