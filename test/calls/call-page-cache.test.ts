/**
 * Call pages are served again from their rendered bytes: never once what they were read from has
 * moved (a new or suppressed call, a project that now links a token, the collector's freshness), nor
 * once a pnl has started or stopped being served (24 hours from its checkedAt).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it, vi } from 'vitest';
import { CALL_INDEX_COLLECTION, CALLS_COLLECTION, CALLS_COLLECTOR_COLLECTION } from '../../projectors/calls.ts';
import { PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import { pnlSpan } from '../../service/call-read-time.ts';
import {
  callId,
  callsCollected,
  identity,
  makeCall,
  pnl,
  recordCall,
  sightProject,
  suppressCall,
  token,
} from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('pnlSpan', () => {
  const at = new Date(day(30));
  const call = (checkedAt: string | null) => ({
    tokens: [],
    caller: { pnl: checkedAt === null ? null : pnl(checkedAt) },
  });

  it('is every time when no call has a known pnl', () => {
    assert.deepEqual(pnlSpan([call(null), call('not a time')], at), { from: -Infinity, until: Infinity });
  });

  it("runs from the last pnl change before the read to the first one after it (a change at the read's own time is before it)", () => {
    const t = at.getTime();
    const span = pnlSpan(
      [call(iso(t - HOUR)), call(iso(t + 60_000)), call(iso(t - 24 * HOUR + 5000)), call(iso(t - 30 * HOUR))],
      at,
    );
    assert.deepEqual(span, { from: t - HOUR, until: t + 5000 });
    assert.deepEqual(pnlSpan([call(iso(t))], at), { from: t, until: t + 24 * HOUR });
    assert.deepEqual(pnlSpan([call(iso(t - 24 * HOUR))], at), { from: t, until: Infinity });
  });
});

describe('GET /v1/calltracker/calls served again', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function page(harness: Harness, key: string, url = '/v1/calltracker/calls?limit=10'): Promise<any> {
    const res = await harness.get(url, key);
    assert.equal(res.status, 200, res.body);
    return res.json();
  }

  it('serves a pnl exactly while it is younger than 24 hours and not future-dated, whatever was kept', async () => {
    let now = new Date(day(30));
    const harness = (h = await createHarness({ now: () => now }));
    const key = await harness.key('reader');
    const t = now.getTime();
    await recordCall(harness, makeCall(0, { createdAt: day(10), pnl: pnl(iso(t - 24 * HOUR + 2000)) }));
    await recordCall(harness, makeCall(1, { createdAt: day(11), pnl: pnl(iso(t + 3000)) }));
    await harness.stores.catchUp();
    const pnls = async () =>
      Object.fromEntries(
        (await page(harness, key)).calls.map((c: any) => [c.id, c.caller.pnl === null ? null : c.caller.pnl.checkedAt]),
      );

    assert.deepEqual(await pnls(), { [callId(0)]: iso(t - 24 * HOUR + 2000), [callId(1)]: null });
    assert.deepEqual(
      await pnls(),
      { [callId(0)]: iso(t - 24 * HOUR + 2000), [callId(1)]: null },
      'read again at the same time',
    );
    now = new Date(t + 1999);
    assert.deepEqual(
      await pnls(),
      { [callId(0)]: iso(t - 24 * HOUR + 2000), [callId(1)]: null },
      'a millisecond before the first change',
    );
    now = new Date(t + 2000);
    assert.deepEqual(await pnls(), { [callId(0)]: null, [callId(1)]: null }, 'call 0 is 24 hours old');
    now = new Date(t + 3000);
    assert.deepEqual(await pnls(), { [callId(0)]: null, [callId(1)]: iso(t + 3000) }, "call 1's checkedAt has come");
    now = new Date(t - 60_000);
    assert.deepEqual(
      await pnls(),
      { [callId(0)]: iso(t - 24 * HOUR + 2000), [callId(1)]: null },
      'the clock stepped back',
    );
  });

  it('serves every change of a source read model on the next read, with readAt of that read', async () => {
    let now = new Date(day(30));
    const harness = (h = await createHarness({ now: () => now }));
    const key = await harness.key('reader');
    const contract = '0x4444444444444444444444444444444444444444';
    await recordCall(
      harness,
      makeCall(0, { createdAt: day(10), tokens: [token(0, { chain: 'base', key: 'base', contract })] }),
    );
    await harness.stores.catchUp();

    const first = await page(harness, key);
    assert.deepEqual(
      first.calls.map((c: any) => c.id),
      [callId(0)],
    );
    assert.equal(first.calls[0].tokens[0].project, null);
    now = new Date(now.getTime() + 1000);
    const again = await page(harness, key);
    assert.equal(again.readAt, now.toISOString());
    assert.deepEqual({ ...again, readAt: first.readAt }, first);

    await recordCall(harness, makeCall(1, { createdAt: day(11) }));
    await harness.stores.catchUp();
    assert.deepEqual(
      (await page(harness, key)).calls.map((c: any) => c.id),
      [callId(1), callId(0)],
      'a new call',
    );

    await sightProject(harness, { projectId: 'linked', at: day(12), identity: identity({ chain: 'base', contract }) });
    await harness.stores.catchUp();
    assert.equal(
      (await page(harness, key)).calls[1].tokens[0].project?.id,
      'linked',
      'a project now holding the token',
    );

    await suppressCall(harness, callId(1), day(13));
    await harness.stores.catchUp();
    assert.deepEqual(
      (await page(harness, key)).calls.map((c: any) => c.id),
      [callId(0)],
      'a suppressed call',
    );

    const before = (await page(harness, key)).freshness;
    await callsCollected(harness, { checkedAt: day(14), completeAt: day(14), lastAttemptComplete: true }, day(14));
    await harness.stores.catchUp();
    assert.notDeepEqual((await page(harness, key)).freshness, before, "the collector's freshness");

    const filtered = await page(harness, key, `/v1/calltracker/calls?contract=${contract}`);
    assert.deepEqual(
      filtered.calls.map((c: any) => c.id),
      [callId(0)],
      'another query is another page',
    );
  });
});

describe('the version a call page is kept under', () => {
  it('moves with each of its four source read models alone: the page is read again after any of them commits', async () => {
    const now = new Date(day(30));
    const harness = await createHarness({ now: () => now });
    try {
      const key = await harness.key('reader');
      await recordCall(harness, makeCall(0, { createdAt: day(10) }));
      await harness.stores.catchUp();
      const store = harness.stores.store;
      const reads = vi.spyOn(store, 'listKeyset');
      const read = async () => {
        const res = await harness.get('/v1/calltracker/calls?limit=10', key);
        assert.equal(res.status, 200, res.body);
      };
      // A page is kept from its second read under a version on (a one-off read is not kept).
      await read();
      assert.equal(reads.mock.calls.length, 1, 'the first read reads the calls');
      await read();
      assert.equal(reads.mock.calls.length, 2, 'the second read too, and keeps the page');
      await read();
      assert.equal(reads.mock.calls.length, 2, 'the same version: the kept page');
      for (const collection of [
        CALLS_COLLECTION,
        CALL_INDEX_COLLECTION,
        CALLS_COLLECTOR_COLLECTION,
        PROJECTS_COLLECTION,
      ]) {
        const before: number = reads.mock.calls.length;
        // Only this read model's checkpoint moves (an empty commit), as when its projector runs ahead of the others.
        await store.commit(collection, [], (await store.checkpoint(collection)) + 1);
        await read();
        assert.equal(reads.mock.calls.length, before + 1, `read again after ${collection} moved`);
        await read();
        await read();
        assert.equal(reads.mock.calls.length, before + 2, `kept again at the new version of ${collection}`);
      }
    } finally {
      await harness.close();
    }
  });
});
