import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { CALL_INDEX_COLLECTION, CALLS_COLLECTION } from '../../projectors/calls.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { callPageSchema } from '../../readmodels/schemas.ts';
import {
  callId,
  callsCollected,
  identity,
  makeCall,
  pnl,
  recordCall,
  restoreCall,
  sightProject,
  suppressCall,
  token,
  writeDossier,
} from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { createCheckedClient } from '../support/openapi-validator.ts';

const NOW = new Date(day(30));
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

type Client = Awaited<ReturnType<typeof createCheckedClient>>;

/** Every page from `url` on, following `next` with the same filters. */
async function allPages(client: Client, key: string, url: string): Promise<any[]> {
  const pages: any[] = [];
  let next: string | null = null;
  do {
    const sep = url.includes('?') ? '&' : '?';
    const res = await client.get(next === null ? url : `${url}${sep}cursor=${encodeURIComponent(next)}`, key);
    assert.equal(res.status, 200, res.body);
    pages.push(res.json());
    next = res.json().next;
  } while (next !== null);
  return pages;
}

function assertBadRequest(res: { status: number; json: () => any }, pattern: RegExp) {
  assert.equal(res.status, 400);
  assert.equal(res.json().error.code, 'bad_request');
  assert.match(res.json().error.message, pattern);
}

describe('GET /v1/calltracker/calls', () => {
  let h: Harness;
  let key: string;
  let client: Client;
  const SHARED = '0xAaAa00000000000000000000000000000000bEEF';

  beforeAll(async () => {
    h = await createHarness({ now: () => NOW });
    key = await h.key('reader');
    // 45 calls, one every hour; calls 40 and 41 share a createdAt so ties by id are exercised.
    for (let n = 0; n < 45; n++) {
      const createdAt = n === 41 ? iso(Date.parse(day(1)) + 40 * HOUR) : iso(Date.parse(day(1)) + n * HOUR);
      const tokens = [token(n)];
      if (n % 3 === 0)
        tokens.push(
          token(900, { chain: n % 2 === 0 ? 'Ethereum' : 'base', key: n % 2 === 0 ? 'eth' : 'base', contract: SHARED }),
        );
      await recordCall(h, makeCall(n, { createdAt, tokens }));
    }
    client = await createCheckedClient(h);
    await h.stores.catchUp();
  });
  afterAll(() => h.close());

  it('lists newest first with ties by id, 20 by default, and reaches every call exactly once by following next', async () => {
    const pages = await allPages(client, key, '/v1/calltracker/calls');
    assert.deepEqual(
      pages.map((p) => p.calls.length),
      [20, 20, 5],
    );
    assert.ok(pages.every((p) => p.limit === 20));
    const served = pages.flatMap((p) => p.calls);
    assert.equal(new Set(served.map((c: any) => c.id)).size, 45);
    const order = served.map((c: any) => [Date.parse(c.createdAt), c.id]);
    const sorted = [...order].sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0));
    assert.deepEqual(order, sorted);
    assert.equal(served[0].id, callId(44));
    const tie = served.filter((c: any) => c.id === callId(40) || c.id === callId(41)).map((c: any) => c.id);
    assert.deepEqual(tie, [callId(40), callId(41)].sort().reverse());
    assert.equal(pages.at(-1).next, null);
  });

  it('honours limit 1 to 30 and refuses anything else naming limit', async () => {
    assert.equal((await client.get('/v1/calltracker/calls?limit=1', key)).json().calls.length, 1);
    const thirty = (await client.get('/v1/calltracker/calls?limit=30', key)).json();
    assert.equal(thirty.calls.length, 30);
    assert.equal(thirty.limit, 30);
    for (const bad of ['0', '31', 'abc', '1.5', '-1', '']) {
      assertBadRequest(await client.get(`/v1/calltracker/calls?limit=${bad}`, key), /'limit'/);
    }
  });

  it('filters by contract across chains without chain, and by chain name or key with it', async () => {
    const everyChain = (
      await allPages(client, key, `/v1/calltracker/calls?contract=${SHARED.toLowerCase()}&limit=4`)
    ).flatMap((p) => p.calls);
    const expected = Array.from({ length: 45 }, (_, n) => n).filter((n) => n % 3 === 0);
    assert.deepEqual(everyChain.map((c: any) => c.id).sort(), expected.map(callId).sort());
    const onEthereum = expected
      .filter((n) => n % 2 === 0)
      .map(callId)
      .sort();
    for (const chain of ['eth', 'ethereum', 'ETHEREUM', 'mainnet']) {
      const calls = (
        await allPages(
          client,
          key,
          `/v1/calltracker/calls?contract=${SHARED.toUpperCase().replace('0X', '0x')}&chain=${chain}`,
        )
      ).flatMap((p) => p.calls);
      assert.deepEqual(calls.map((c: any) => c.id).sort(), onEthereum, chain);
    }
    const none = (await client.get(`/v1/calltracker/calls?contract=${SHARED}&chain=solana`, key)).json();
    assert.deepEqual(none.calls, []);
    assert.equal(none.next, null);
  });

  it('refuses chain without contract and over-long or malformed filters, naming the parameter', async () => {
    assertBadRequest(
      await client.get('/v1/calltracker/calls?chain=base', key),
      /'chain' is allowed only together with 'contract'/,
    );
    assertBadRequest(
      await client.get(`/v1/calltracker/calls?contract=${'a'.repeat(101)}`, key),
      /'contract' must be at most 100/,
    );
    assertBadRequest(
      await client.get(`/v1/calltracker/calls?contract=0xabc&chain=${'b'.repeat(61)}`, key),
      /'chain' must be at most 60/,
    );
    assertBadRequest(await client.get('/v1/calltracker/calls?contract=0x%20abc', key), /'contract'/);
    assertBadRequest(await client.get('/v1/calltracker/calls?contract=a&contract=b', key), /'contract'/);
    assertBadRequest(await client.get('/v1/calltracker/calls?sort=asc', key), /unknown parameter 'sort'/);
  });

  it('binds the cursor to the normalized filters: other filters, garbage and over-long cursors are 400 saying what to change', async () => {
    const first = (await client.get(`/v1/calltracker/calls?contract=${SHARED}&chain=eth&limit=2`, key)).json();
    assert.ok(first.next);
    // The same filters in another spelling are the same normalized filters.
    const same = await client.get(
      `/v1/calltracker/calls?contract=${SHARED.toLowerCase()}&chain=Ethereum&limit=2&cursor=${first.next}`,
      key,
    );
    assert.equal(same.status, 200);
    const otherChain = await client.get(
      `/v1/calltracker/calls?contract=${SHARED}&chain=base&cursor=${first.next}`,
      key,
    );
    assertBadRequest(
      otherChain,
      /'cursor' was issued for contract=0xaaaa0+beef and chain=ethereum, but this request has contract=0xaaaa0+beef and chain=base; send the same contract and chain/,
    );
    assertBadRequest(
      await client.get(`/v1/calltracker/calls?cursor=${first.next}`, key),
      /'cursor' was issued for .*no contract or chain filter/,
    );
    assertBadRequest(
      await client.get(`/v1/calltracker/calls?contract=${SHARED}&cursor=${first.next}`, key),
      /without chain/,
    );
    const unfiltered = (await client.get('/v1/calltracker/calls?limit=1', key)).json();
    assertBadRequest(
      await client.get(`/v1/calltracker/calls?contract=${SHARED}&cursor=${unfiltered.next}`, key),
      /issued for no contract or chain filter/,
    );
    assertBadRequest(
      await client.get('/v1/calltracker/calls?cursor=not-a-cursor', key),
      /'cursor' is not a cursor this service issued/,
    );
    const wrongShape = Buffer.from(JSON.stringify({ v: 2, k: 'x' })).toString('base64url');
    assertBadRequest(await client.get(`/v1/calltracker/calls?cursor=${wrongShape}`, key), /'cursor' is not a cursor/);
    assertBadRequest(
      await client.get(`/v1/calltracker/calls?cursor=${'A'.repeat(513)}`, key),
      /'cursor' must be at most 512/,
    );
    assertBadRequest(await client.get('/v1/calltracker/calls?cursor=', key), /'cursor'/);
  });

  it('keeps cursors within 512 characters for the longest filters', async () => {
    const contract = `0x${'f'.repeat(98)}`;
    const chain = `c${'h'.repeat(59)}`;
    for (let n = 0; n < 3; n++)
      await recordCall(
        h,
        makeCall(500 + n, { createdAt: day(2, n), tokens: [token(0, { chain, key: chain, contract })] }),
      );
    await h.stores.catchUp();
    const pages = await allPages(client, key, `/v1/calltracker/calls?contract=${contract}&chain=${chain}&limit=1`);
    assert.equal(pages.length, 3);
    for (const p of pages.slice(0, -1)) assert.ok(p.next.length <= 512, `${p.next.length}`);
  });

  it('drops a call suppressed between two page reads from the next read, and 404s its detail until restored', async () => {
    const page1 = (await client.get('/v1/calltracker/calls?limit=5', key)).json();
    const page2Before = (await client.get(`/v1/calltracker/calls?limit=5&cursor=${page1.next}`, key)).json();
    const victim = page2Before.calls[2].id;
    await suppressCall(h, victim, day(29));
    await h.stores.catchUp();
    const page2 = (await client.get(`/v1/calltracker/calls?limit=5&cursor=${page1.next}`, key)).json();
    assert.ok(!page2.calls.some((c: any) => c.id === victim));
    assert.deepEqual(
      page2.calls.slice(0, 4).map((c: any) => c.id),
      page2Before.calls.filter((c: any) => c.id !== victim).map((c: any) => c.id),
    );
    const detail = await client.get(`/v1/calltracker/calls/${victim}`, key);
    assert.equal(detail.status, 404);
    assert.equal(detail.json().error.code, 'not_found');
    const everything = (await allPages(client, key, '/v1/calltracker/calls?limit=30')).flatMap((p) => p.calls);
    assert.ok(!everything.some((c: any) => c.id === victim));
    await restoreCall(h, victim, day(29, 1));
    await h.stores.catchUp();
    assert.equal((await client.get(`/v1/calltracker/calls/${victim}`, key)).status, 200);
  });

  it('checks suppression on the record itself even while the payload-free index trails it', async () => {
    const url = `/v1/calltracker/calls?contract=${SHARED}&limit=3`;
    const before = (await allPages(client, key, url)).flatMap((p) => p.calls.map((c: any) => c.id));
    const victim = before[4];
    await suppressCall(h, victim, day(29, 2));
    // Only the records are brought up to date; the index still lists the call as visible.
    const recordsRunner = createProjectorRunner(
      h.stores.log,
      h.stores.store,
      projectors.find((p) => p.collection === CALLS_COLLECTION)!,
    );
    await recordsRunner.catchUp();
    assert.equal((await h.stores.store.get(CALL_INDEX_COLLECTION, victim))!.facet, 'visible');
    const after = (await allPages(client, key, url)).flatMap((p) => p.calls.map((c: any) => c.id));
    assert.deepEqual(
      after,
      before.filter((id: string) => id !== victim),
    );
    await restoreCall(h, victim, day(29, 3));
    await h.stores.catchUp();
  });

  it('serves one call by id (any case), 404 for an unknown id, 400 for a malformed one', async () => {
    const res = await client.get(`/v1/calltracker/calls/${callId(7).toUpperCase()}`, key);
    assert.equal(res.status, 200);
    const body = res.json();
    assert.equal(body.call.id, callId(7));
    assert.equal(body.call.thesisText, 'Call 7: thesis.');
    assert.equal(body.readAt, NOW.toISOString());
    const unknown = await client.get('/v1/calltracker/calls/00000000-0000-4000-8000-000000000000', key);
    assert.equal(unknown.status, 404);
    assertBadRequest(await client.get('/v1/calltracker/calls/not-a-uuid', key), /'id' must be a call id/);
    assertBadRequest(await client.get(`/v1/calltracker/calls/${callId(7)}?x=1`, key), /unknown parameter 'x'/);
    assert.equal((await client.get(`/v1/calltracker/calls/${callId(7)}`)).status, 401);
  });

  it('replaces a call on an edit and lists it once', async () => {
    const edited = makeCall(8, {
      createdAt: iso(Date.parse(day(1)) + 8 * HOUR),
      updatedAt: day(20),
      thesis: 'Edited thesis.',
      tokens: [token(1), token(2)],
    });
    await recordCall(h, edited);
    await h.stores.catchUp();
    const detail = (await client.get(`/v1/calltracker/calls/${callId(8)}`, key)).json();
    assert.equal(detail.call.thesisText, 'Edited thesis.');
    assert.equal(detail.call.updatedAt, day(20));
    assert.equal(detail.call.tokens.length, 2);
    const all = (await allPages(client, key, '/v1/calltracker/calls?limit=30')).flatMap((p) => p.calls);
    assert.equal(all.filter((c: any) => c.id === callId(8)).length, 1);
  });

  it('reports collector freshness from the latest collector report', async () => {
    assert.deepEqual((await client.get('/v1/calltracker/calls?limit=1', key)).json().freshness, {
      checkedAt: null,
      completeAt: null,
      lastAttemptComplete: null,
    });
    await callsCollected(h, { checkedAt: day(29, 5), completeAt: day(28), lastAttemptComplete: false }, day(29, 5));
    await h.stores.catchUp();
    const expected = { checkedAt: day(29, 5), completeAt: day(28), lastAttemptComplete: false };
    assert.deepEqual((await client.get('/v1/calltracker/calls?limit=1', key)).json().freshness, expected);
    assert.deepEqual((await client.get(`/v1/calltracker/calls/${callId(3)}`, key)).json().freshness, expected);
  });
});

describe('call records: read-time rules', () => {
  let h: Harness;
  let key: string;
  let client: Client;
  const LINKED = '0x1111111111111111111111111111111111111111';
  const TWICE = '0x2222222222222222222222222222222222222222';
  const SOL = 'So11111111111111111111111111111111111111112';

  beforeAll(async () => {
    h = await createHarness({ now: () => NOW });
    key = await h.key('reader');
    client = await createCheckedClient(h);
    const pnls = [
      pnl(iso(NOW.getTime() - HOUR)),
      pnl(iso(NOW.getTime() - 24 * HOUR)),
      pnl(iso(NOW.getTime() - 24 * HOUR + 1000)),
      pnl(iso(NOW.getTime() + 60_000)),
      null,
    ];
    for (const [i, p] of pnls.entries()) await recordCall(h, makeCall(i, { createdAt: day(10, i), pnl: p }));
    await recordCall(
      h,
      makeCall(10, {
        createdAt: day(11),
        tokens: [
          token(0, { chain: 'eth', key: 'eth', contract: LINKED.toUpperCase().replace('0X', '0x') }),
          token(1, { chain: 'base', key: 'base', contract: LINKED }),
          token(2, { chain: 'base', key: 'base', contract: TWICE }),
          token(3, { chain: 'sol', key: 'sol', contract: SOL }),
          token(4, { chain: 'base', key: 'base', contract: '0x3333333333333333333333333333333333333333' }),
        ],
      }),
    );
    await sightProject(h, {
      projectId: 'alpha',
      at: day(5),
      handle: 'alpha_x',
      name: 'Alpha',
      pfp: 'https://img.example/alpha.png',
      bio: 'Alpha bio',
      identity: identity({ chain: 'ethereum', contract: LINKED, website: 'https://alpha.example' }),
    });
    await sightProject(h, { projectId: 'twin-1', at: day(5), identity: identity({ chain: 'base', contract: TWICE }) });
    await sightProject(h, { projectId: 'twin-2', at: day(5), identity: identity({ chain: 'Base', contract: TWICE }) });
    await sightProject(h, { projectId: 'solproj', at: day(5), handle: null, name: null });
    await writeDossier(h, 'solproj', day(6), {
      name: 'Sol Project',
      site: 'https://sol.example',
      token: { ticker: 'SP', contract: SOL, chain: 'solana' },
    });
    // A dossier for a project never sighted: not public, so never linked.
    await writeDossier(h, 'ghost', day(6), {
      token: { ticker: 'G', contract: '0x3333333333333333333333333333333333333333', chain: 'base' },
    });
    await h.stores.catchUp();
  });
  afterAll(() => h.close());

  it('serves pnl only when known, not future-dated and younger than 24 hours', async () => {
    const pnlOf = async (n: number) =>
      (await client.get(`/v1/calltracker/calls/${callId(n)}`, key)).json().call.caller.pnl;
    assert.deepEqual(await pnlOf(0), pnl(iso(NOW.getTime() - HOUR)));
    assert.equal(await pnlOf(1), null, 'exactly 24 hours old');
    assert.deepEqual(await pnlOf(2), pnl(iso(NOW.getTime() - 24 * HOUR + 1000)), 'a second younger than 24 hours');
    assert.equal(await pnlOf(3), null, 'future-dated');
    assert.equal(await pnlOf(4), null, 'unknown');
  });

  it('links a token to a project only for exactly one current chain + contract match, built from the current project', async () => {
    const tokens = (await client.get(`/v1/calltracker/calls/${callId(10)}`, key)).json().call.tokens;
    assert.deepEqual(tokens[0].project, {
      id: 'alpha',
      href: '/projects/alpha',
      name: 'Alpha',
      avatar: 'https://img.example/alpha.png',
      bio: 'Alpha bio',
      xHandle: 'alpha_x',
      website: 'https://alpha.example',
      hasDossier: false,
    });
    assert.equal(tokens[1].project, null, 'same contract on another chain');
    assert.equal(tokens[2].project, null, 'two projects hold base:TWICE');
    assert.deepEqual(tokens[3].project, {
      id: 'solproj',
      href: '/projects/solproj',
      name: 'Sol Project',
      avatar: null,
      bio: null,
      xHandle: null,
      website: 'https://sol.example',
      hasDossier: true,
    });
    assert.equal(tokens[4].project, null, 'a project that was never sighted is not public');
    // The listing applies the same rules.
    const listed = (await client.get('/v1/calltracker/calls?limit=1', key)).json().calls[0];
    assert.deepEqual(listed.tokens, tokens);

    // Links are resolved on each read: a rename shows at once; a second holder removes the link.
    await sightProject(h, { projectId: 'alpha', at: day(7), name: 'Alpha Renamed' });
    await h.stores.catchUp();
    assert.equal(
      (await client.get(`/v1/calltracker/calls/${callId(10)}`, key)).json().call.tokens[0].project.name,
      'Alpha Renamed',
    );
    await sightProject(h, {
      projectId: 'alpha-copy',
      at: day(7),
      identity: identity({ chain: 'eth', contract: LINKED }),
    });
    await h.stores.catchUp();
    assert.equal((await client.get(`/v1/calltracker/calls/${callId(10)}`, key)).json().call.tokens[0].project, null);
    const stillThere = (await client.get(`/v1/calltracker/calls?contract=${LINKED}`, key)).json();
    assert.deepEqual(
      stillThere.calls.map((c: any) => c.id),
      [callId(10)],
      'no safe link does not erase the call',
    );
    assert.ok(callPageSchema.safeParse(stillThere).success);
  });
});
