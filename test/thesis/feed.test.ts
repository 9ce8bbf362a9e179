import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'vitest';
import { streams } from '../../events/streams.ts';
import { thesisStatusSchema, type ThesisStatus } from '../../readmodels/schemas.ts';
import type { Result } from '../../service/errors.ts';
import type { ThesisReply } from '../../service/thesis/feed.ts';
import { createOpenJobsLedger } from '../../service/thesis/jobs.ts';
import { dailyCount, globalScope, memberScope } from '../../service/thesis/quota.ts';
import { contractOf, harness, item, scriptedSource, type Harness } from './helpers.ts';

const MINUTE = 60_000;
const A = '0xAbCdEf0123456789abcdef0123456789ABCDEF01';
const a = A.toLowerCase();

function okValue<T>(result: Result<T>): T {
  if (!result.ok) assert.fail(`expected ok, got ${result.error.status} ${result.error.message}`);
  return result.value;
}

function strictStatus(status: ThesisStatus): ThesisStatus {
  // No additional properties anywhere: the strict schema refuses any.
  return thesisStatusSchema.parse(status);
}

const goodSource = () =>
  scriptedSource(() => ({
    ok: true,
    items: [item(1), item(2, { trade: { usdValue: 999, realizedPnlUsd: null, unrealizedPnlUsd: null } })],
    moreAtSource: false,
    sourceUrl: 'https://source.example/t',
  }));

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

describe('thesis feed: input, switch and access', () => {
  it('answers 400 naming contract for a missing, malformed or over-specified input', async () => {
    h = await harness({ source: goodSource().source });
    const caller = await h.member('ann');
    const cases: unknown[] = [
      {},
      { contract: '0x123' },
      { contract: 42 },
      { contract: A, chain: 'x' },
      null,
      'text',
      [A],
    ];
    for (const body of cases) {
      const result = await h.feed.request(caller, body);
      assert.equal(result.ok, false);
      if (result.ok) continue;
      assert.equal(result.error.status, 400);
      assert.equal(result.error.code, 'bad_request');
      assert.match(result.error.message, /contract/);
    }
    const extra = await h.feed.request(caller, { contract: A, chain: 'x' });
    assert.ok(!extra.ok && extra.error.message.includes('chain'));
    const get = await h.feed.status(caller, { contract: 'nope' });
    assert.ok(!get.ok && get.error.status === 400 && /contract/.test(get.error.message));
  });

  it('answers 503 on both operations when the feature is off', async () => {
    h = await harness({ source: goodSource().source, env: { PULSEBOARD_THESIS_FEED: 'off' } });
    const caller = await h.member('ann');
    for (const result of [
      await h.feed.status(caller, { contract: A }),
      await h.feed.request(caller, { contract: A }),
    ]) {
      assert.ok(!result.ok);
      assert.equal(result.error.status, 503);
    }
  });

  it('answers 403 unless the owner is both allowlisted and linked, re-checked on every call', async () => {
    h = await harness({ source: goodSource().source });
    const { changeOwner } = await import('../../service/access.ts');
    const caller = { keyId: 'k', owner: 'bob' };
    const forbidden = async () => {
      const results = [await h!.feed.status(caller, { contract: A }), await h!.feed.request(caller, { contract: A })];
      return results.every((r) => !r.ok && r.error.status === 403);
    };
    assert.ok(await forbidden(), 'unknown owner');
    await changeOwner(h, 'bob', 'allow');
    assert.ok(await forbidden(), 'allowlisted, not linked');
    await changeOwner(h, 'bob', 'link');
    assert.equal((await h.feed.status(caller, { contract: A })).ok, true);
    await changeOwner(h, 'bob', 'deny');
    assert.ok(await forbidden(), 'denied after being allowed');
  });
});

describe('thesis feed: states and transitions', () => {
  it('GET never reads the source and never appends', async () => {
    const { source, reads } = goodSource();
    h = await harness({ source });
    const caller = await h.member('ann');
    const head = await h.log.headPosition();
    const status = strictStatus(okValue(await h.feed.status(caller, { contract: A })));
    assert.deepEqual(
      { ...status, checkedAt: null },
      {
        status: 'not_requested',
        snapshot: null,
        lastOutcome: null,
        nextEligibleAt: null,
        workerAvailable: true,
        checkedAt: null,
      },
    );
    assert.equal(status.checkedAt, h.clock.now().toISOString());
    assert.equal(await h.log.headPosition(), head);
    assert.deepEqual(reads, []);
  });

  it('queues, dedupes while pending, saves, serves the cache, goes stale and is dropped after 24 hours', async () => {
    const { source, reads } = goodSource();
    h = await harness({ source });
    const ann = await h.member('ann');
    const ben = await h.member('ben');

    const first = okValue(await h.feed.request(ann, { contract: A }));
    assert.equal(first.httpStatus, 202);
    assert.equal(strictStatus(first.status).status, 'queued');

    // A POST while pending (another member, mixed-case address) creates nothing.
    const again = okValue(await h.feed.request(ben, { contract: a }));
    assert.equal(again.httpStatus, 202);
    assert.equal(again.status.status, 'queued');
    assert.deepEqual((await h.events()).filter((e) => e.type === 'thesis.requested').length, 1);
    assert.equal(await dailyCount(h.log, { scope: globalScope, day: '2026-11-22' }), 1);
    assert.equal(await dailyCount(h.log, { scope: memberScope('ben'), day: '2026-11-22' }), 0);

    await h.project();
    assert.equal(okValue(await h.feed.status(ann, { contract: A })).status, 'queued');

    assert.equal(await h.reader.runOnce(), 1);
    const types = (await h.log.readStream(streams.thesis(a))).map((e) => e.type);
    assert.deepEqual(types, ['thesis.requested', 'thesis.started', 'thesis.saved']);
    assert.deepEqual(reads, [a]);

    await h.project();
    const ready = strictStatus(okValue(await h.feed.status(ann, { contract: A })));
    assert.equal(ready.status, 'ready');
    assert.equal(ready.snapshot?.contract, a);
    assert.equal(ready.snapshot?.networkId, 4663);
    assert.equal(ready.snapshot?.fetchedAt, '2026-11-22T10:00:00.000Z');
    assert.deepEqual(
      ready.snapshot?.items.map((i) => i.id),
      ['item-1'],
      'the 999 USD item is below the threshold',
    );
    assert.equal(ready.snapshot?.hasMore, false);
    assert.equal(ready.lastOutcome, 'saved 1 item at or above 1000 USD');
    assert.equal(ready.nextEligibleAt, '2026-11-22T10:30:00.000Z');

    // Within 30 minutes: a 200 cache hit that reads nothing and appends nothing.
    await h.tick(29 * MINUTE);
    const head = await h.log.headPosition();
    const hit = okValue(await h.feed.request(ben, { contract: A }));
    assert.equal(hit.httpStatus, 200);
    assert.equal(hit.status.status, 'ready');
    assert.equal(await h.log.headPosition(), head);
    assert.equal(await h.reader.runOnce(), 0);
    assert.deepEqual(reads, [a]);

    // 30 minutes after fetchedAt: stale, snapshot kept, eligible again.
    await h.tick(MINUTE);
    const stale = strictStatus(okValue(await h.feed.status(ann, { contract: A })));
    assert.equal(stale.status, 'stale');
    assert.equal(stale.snapshot?.items.length, 1);
    assert.equal(stale.nextEligibleAt, null);

    // 24 hours after fetchedAt: not_requested and the snapshot is gone.
    await h.tick(24 * 60 * MINUTE - 30 * MINUTE);
    const dropped = strictStatus(okValue(await h.feed.status(ann, { contract: A })));
    assert.deepEqual(
      { ...dropped, checkedAt: null },
      {
        status: 'not_requested',
        snapshot: null,
        lastOutcome: null,
        nextEligibleAt: null,
        workerAvailable: true,
        checkedAt: null,
      },
    );
  });

  it('a POST on a stale snapshot queues a refresh and keeps showing the stale snapshot meanwhile', async () => {
    const { source, reads } = goodSource();
    h = await harness({ source });
    const ann = await h.member('ann');
    okValue(await h.feed.request(ann, { contract: A }));
    await h.reader.runOnce();
    await h.tick(45 * MINUTE);
    const refresh = okValue(await h.feed.request(ann, { contract: A }));
    assert.equal(refresh.httpStatus, 202);
    assert.equal(refresh.status.status, 'queued');
    assert.equal(refresh.status.snapshot?.items.length, 1);
    assert.equal(refresh.status.lastOutcome, 'saved 1 item at or above 1000 USD');
    await h.reader.runOnce();
    assert.equal(reads.length, 2);
    assert.equal(okValue(await h.feed.status(ann, { contract: A })).status, 'ready');
  });

  it('a failure is final: no retry, a cooldown reported as nextEligibleAt and refused with 429 until then', async () => {
    let fail = true;
    const { source, reads } = scriptedSource(() =>
      fail
        ? { ok: false, outcome: 'source answered HTTP 500' }
        : { ok: true, items: [item(1)], moreAtSource: false, sourceUrl: 'https://source.example/t' },
    );
    h = await harness({ source });
    const ann = await h.member('ann');
    okValue(await h.feed.request(ann, { contract: A }));
    assert.equal(await h.reader.runOnce(), 1);
    assert.equal(await h.reader.runOnce(), 0, 'nothing is retried');
    assert.equal(reads.length, 1);

    const failed = strictStatus(okValue(await h.feed.status(ann, { contract: A })));
    assert.equal(failed.status, 'failed');
    assert.equal(failed.lastOutcome, 'source answered HTTP 500');
    assert.equal(failed.nextEligibleAt, '2026-11-22T10:10:00.000Z');

    await h.tick(4 * MINUTE);
    const refused = await h.feed.request(ann, { contract: A });
    assert.ok(!refused.ok);
    assert.equal(refused.error.status, 429);
    assert.equal(refused.error.retryAfter, 6 * 60);

    await h.tick(6 * MINUTE);
    const afterCooldown = strictStatus(okValue(await h.feed.status(ann, { contract: A })));
    assert.equal(afterCooldown.status, 'failed', 'failed stays failed until someone asks again');
    assert.equal(afterCooldown.nextEligibleAt, null);
    fail = false;
    assert.equal(okValue(await h.feed.request(ann, { contract: A })).httpStatus, 202);
    await h.reader.runOnce();
    assert.equal(okValue(await h.feed.status(ann, { contract: A })).status, 'ready');
    assert.equal(reads.length, 2);
  });

  it('POST answers 503 when no reader is alive (GET still answers, workerAvailable false)', async () => {
    h = await harness({ source: goodSource().source, readerAlive: false });
    const ann = await h.member('ann');
    const post = await h.feed.request(ann, { contract: A });
    assert.ok(!post.ok);
    assert.equal(post.error.status, 503);
    assert.equal(okValue(await h.feed.status(ann, { contract: A })).workerAvailable, false);
    assert.equal((await h.events()).length, 0, 'nothing was appended');

    // A heartbeat older than its TTL counts as no reader.
    await h.heartbeat.beat();
    h.clock.advance(31_000);
    const late = await h.feed.request(ann, { contract: A });
    assert.ok(!late.ok && late.error.status === 503);
  });
});

describe('thesis feed: caps', () => {
  async function startAndFinish(feed: Harness, owner: string, n: number): Promise<Result<ThesisReply>> {
    const caller = await feed.member(owner);
    const result = await feed.feed.request(caller, { contract: contractOf(n) });
    await feed.reader.runOnce();
    return result;
  }

  it('40 parallel POSTs for 40 contracts with 16 open-job slots: exactly 16 accepted, the rest 429', async () => {
    const { source, reads } = goodSource();
    h = await harness({ source });
    const owners = ['m1', 'm2', 'm3', 'm4'];
    const callers = await Promise.all(owners.map((o) => h!.member(o)));
    let lostRaces = 0;
    const append = h.log.append.bind(h.log);
    h.log.append = async (...args) => {
      const result = await append(...args);
      if (!result.ok) lostRaces += 1;
      return result;
    };
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => h!.feed.request(callers[i % 4]!, { contract: contractOf(i + 1) })),
    );
    const accepted = results.filter((r) => r.ok && r.value.httpStatus === 202);
    const refused = results.filter((r) => !r.ok);
    assert.equal(accepted.length, 16);
    assert.equal(refused.length, 24);
    assert.ok(lostRaces > 0, 'the POSTs really raced on the quota streams');
    for (const r of refused) {
      assert.ok(!r.ok);
      assert.equal(r.error.status, 429);
      assert.equal(r.error.retryAfter, 15, 'one source timeout');
    }
    assert.equal((await h.events()).filter((e) => e.type === 'thesis.requested').length, 16);
    assert.equal((await createOpenJobsLedger(h.log).openJobs()).length, 16);
    // Refused requests handed their daily slots back.
    assert.equal(await dailyCount(h.log, { scope: globalScope, day: '2026-11-22' }), 16);
    const perMember = await Promise.all(
      owners.map((o) => dailyCount(h!.log, { scope: memberScope(o), day: '2026-11-22' })),
    );
    assert.equal(
      perMember.reduce((x, y) => x + y, 0),
      16,
    );

    assert.equal(await h.reader.runOnce(), 16);
    assert.equal(reads.length, 16);
    assert.equal((await createOpenJobsLedger(h.log).openJobs()).length, 0);
    const next = okValue(await h.feed.request(callers[0]!, { contract: contractOf(99) }));
    assert.equal(next.httpStatus, 202);
  });

  it('two parallel POSTs of one contract make one job', async () => {
    h = await harness({ source: goodSource().source });
    const [ann, ben] = [await h.member('ann'), await h.member('ben')];
    const results = await Promise.all([h.feed.request(ann, { contract: A }), h.feed.request(ben, { contract: A })]);
    assert.deepEqual(
      results.map((r) => r.ok && r.value.httpStatus),
      [202, 202],
    );
    assert.equal((await h.events()).filter((e) => e.type === 'thesis.requested').length, 1);
    assert.equal(await dailyCount(h.log, { scope: globalScope, day: '2026-11-22' }), 1);
    assert.equal((await createOpenJobsLedger(h.log).openJobs()).length, 1);
  });

  it('20 submissions per member per UTC day, then 429 until the next UTC midnight', async () => {
    h = await harness({ source: goodSource().source, start: '2026-11-22T23:00:00.000Z' });
    for (let n = 1; n <= 20; n++) assert.equal(okValue(await startAndFinish(h, 'ann', n)).httpStatus, 202);
    const refused = await h.feed.request(await h.member('ann'), { contract: contractOf(21) });
    assert.ok(!refused.ok);
    assert.equal(refused.error.status, 429);
    assert.equal(refused.error.retryAfter, 3600);
    assert.equal(okValue(await startAndFinish(h, 'ben', 21)).httpStatus, 202, 'another member is not affected');
    await h.tick(60 * 60_000);
    assert.equal(okValue(await startAndFinish(h, 'ann', 22)).httpStatus, 202, 'a new UTC day');
  });

  it('60 starts per UTC day in all, failures included', async () => {
    const { source } = scriptedSource((contract) =>
      Number.parseInt(contract.slice(-2), 16) % 2 === 0
        ? { ok: false, outcome: 'source answered HTTP 502' }
        : { ok: true, items: [item(1)], moreAtSource: false, sourceUrl: 'https://source.example/t' },
    );
    h = await harness({ source, start: '2026-11-22T12:00:00.000Z' });
    for (let n = 1; n <= 60; n++)
      assert.equal(okValue(await startAndFinish(h, `m${Math.ceil(n / 20)}`, n)).httpStatus, 202);
    const failures = (await h.events()).filter((e) => e.type === 'thesis.failed').length;
    assert.equal(failures, 30);
    const refused = await h.feed.request(await h.member('m9'), { contract: contractOf(61) });
    assert.ok(!refused.ok);
    assert.equal(refused.error.status, 429);
    assert.equal(refused.error.retryAfter, 12 * 3600);
    // Even a contract whose read failed cannot start again today (its cooldown is over, the day is not).
    await h.tick(11 * 60_000);
    const failedAgain = await h.feed.request(await h.member('m9'), { contract: contractOf(2) });
    assert.ok(!failedAgain.ok && failedAgain.error.status === 429);
  });
});
