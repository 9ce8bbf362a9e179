import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHarness, type Harness } from '../support/harness.ts';
import { eventually } from '../replay/support.ts';
import { appendSightings } from './support.ts';
import { asValue } from '../../service/json-body.ts';
import { PROJECTS_COLLECTION } from '../../projectors/projects.ts';

/** GET as the harness does (OpenAPI-validated), but started now and awaited later. */
const started = (h: Harness, url: string, key: string) => h.get(url, key);

describe('delta long-poll (GET /v1/projects?cursor=C&wait=S)', () => {
  let h: Harness;
  let key: string;
  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '1000' } });
    key = await h.key('mirror');
    await appendSightings(h.stores.log, { first: 0, count: 5, prefix: 'lp' });
    await h.stores.catchUp();
  });
  afterAll(() => h.close());

  const bookmark = async (filter = '') => (await h.get(`/v1/projects?since=now${filter}`, key)).json().cursor as string;

  it('is answered by the commit signal (no poll runs), with the normal delta page, spending one request', async () => {
    // The watch's safety-net poll is set past the wait: only the commit's signal can answer before it ends,
    // and a wait that ends answers an empty page, so the page below proves the wake without timing it.
    const signalled = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '1000' }, commitPollMs: 3_600_000 });
    try {
      const own = await signalled.key('mirror');
      await appendSightings(signalled.stores.log, { first: 0, count: 5, prefix: 'lp' });
      await signalled.stores.catchUp();
      const cursor = (await signalled.get('/v1/projects?since=now', own)).json().cursor as string;
      // A store-wide commit feed (PostgreSQL's NOTIFY) opens with the first wait and checks once when
      // live: opened first, so that only the commit's signals can answer the wait below.
      const unfollow = signalled.stores.commits.follow(() => undefined);
      assert.ok(await eventually(() => ['none', 'live'].includes(signalled.stores.commits.feedState())));
      unfollow();
      const reads = signalled.services.commits.reads();
      // Each signal of a projects commit the watch hears: one per commit on the embedded store; on
      // PostgreSQL the store-wide NOTIFY feed tells this process's own commit a second time.
      let signals = 0;
      const unsubscribe = signalled.stores.commits.subscribe((collection) => {
        if (collection === PROJECTS_COLLECTION) signals += 1;
      });
      const answer = started(signalled, `/v1/projects?cursor=${cursor}&wait=30`, own);
      // Signal-driven: write only once the request is held.
      assert.ok(await eventually(() => signalled.services.commits.waiting() === 1));
      await appendSightings(signalled.stores.log, { first: 100, count: 1, prefix: 'lp' });
      await signalled.stores.catchUp();
      const res = await answer;
      assert.equal(res.status, 200);
      const body = res.json();
      assert.deepEqual(
        body.projects.map((p: { id: string }) => p.id),
        ['lp-100'],
      );
      assert.notEqual(body.cursor, cursor);
      assert.equal(body.hasMore, false);
      // One checkpoint read per signal of the one commit made while the request waited: no poll ran.
      unsubscribe();
      assert.ok(signals >= 1 && signals <= (signalled.config.POSTGRES_URL === undefined ? 1 : 2), `${signals} signals`);
      assert.equal(signalled.services.commits.reads() - reads, signals);
      // The held request counted once against the key's budget, like any other.
      const before = Number(res.headers['ratelimit-remaining']);
      const next = await signalled.get(`/v1/projects?cursor=${body.cursor}`, own);
      assert.equal(Number(next.headers['ratelimit-remaining']), before - 1);
    } finally {
      await signalled.close();
    }
  });

  it('answers an idle wait after S seconds with an empty page and the same cursor', async () => {
    const cursor = await bookmark();
    const t0 = performance.now();
    const res = await h.get(`/v1/projects?cursor=${cursor}&wait=1`, key);
    const elapsed = performance.now() - t0;
    assert.equal(res.status, 200);
    const body = res.json();
    assert.deepEqual(body.projects, []);
    assert.equal(body.cursor, cursor);
    assert.equal(body.hasMore, false);
    // Held for the wait (timers may fire a little early, never much), answered long before a generous bound.
    assert.ok(elapsed >= 990 && elapsed < 10_000, `answered after ${elapsed.toFixed(0)} ms`);
    assert.equal(h.services.commits.waiting(), 0, 'no waiter is left behind');
  });

  it('answers at once when rows are already there (no wait)', async () => {
    const cursor = await bookmark();
    await appendSightings(h.stores.log, { first: 200, count: 3, prefix: 'lp' });
    await h.stores.catchUp();
    const res = await h.get(`/v1/projects?cursor=${cursor}&wait=30`, key);
    assert.deepEqual(
      res.json().projects.map((p: { id: string }) => p.id),
      ['lp-200', 'lp-201', 'lp-202'],
    );
  });

  it('keeps waiting through commits that write no row its filter serves', async () => {
    const cursor = await bookmark('&has_dossier=true');
    const answer = started(h, `/v1/projects?cursor=${cursor}&has_dossier=true&wait=1`, key);
    assert.ok(await eventually(() => h.services.commits.waiting() === 1));
    // A project without a dossier: a commit past the cursor, but nothing for has_dossier=true.
    await appendSightings(h.stores.log, { first: 300, count: 1, prefix: 'lp' });
    await h.stores.catchUp();
    await sleep(50);
    assert.equal(h.services.commits.waiting(), 1, 'still held after the commit');
    const body = (await answer).json();
    assert.deepEqual(body.projects, []);
    assert.equal(body.hasMore, false);
  });

  it('costs one checkpoint read per process, not per waiter, while many wait', async () => {
    const cursor = await bookmark();
    const readsBefore = h.services.commits.reads();
    const answers = Array.from({ length: 200 }, () => started(h, `/v1/projects?cursor=${cursor}&wait=2`, key));
    assert.ok(await eventually(() => h.services.commits.waiting() === 200));
    const bodies = (await Promise.all(answers)).map((r) => r.json());
    assert.ok(bodies.every((b) => b.projects.length === 0 && b.cursor === cursor));
    const reads = h.services.commits.reads() - readsBefore;
    // 2 s of waiting: about 8 polls plus the coalesced checks at registration; per-waiter polling would be thousands.
    assert.ok(reads < 60, `${reads} checkpoint reads for 200 waiters`);
  });

  it('makes the page once for the long-polls one commit wakes: the same bytes, each with its own readAt', async () => {
    const cursor = await bookmark();
    const authorization = `Bearer ${key}`;
    const waits = Array.from({ length: 50 }, () =>
      h.services.projects.sync({ cursor, wait_seconds: '30' }, { authorization }),
    );
    assert.ok(await eventually(() => h.services.commits.waiting() === 50));
    await appendSightings(h.stores.log, { first: 350, count: 1, prefix: 'lp' });
    await h.stores.catchUp();
    const pages = await Promise.all(waits);
    const bodies = pages.map((page) => {
      assert.ok(page.ok);
      return page.value;
    });
    assert.deepEqual(
      bodies[0]!.value().projects.map((p) => p.id),
      ['lp-350'],
    );
    assert.ok(
      bodies.every((body) => body.head === bodies[0]!.head && body.etag === bodies[0]!.etag),
      'one page made, not one per waiter',
    );
    assert.ok(
      bodies.every((body) => /^\d{4}-\d\d-\d\dT/.test(body.readAt)),
      'each answer carries its read time',
    );
  });

  it('refuses a bad wait with the error envelope', async () => {
    const cursor = await bookmark();
    for (const [url, pattern] of [
      [`/v1/projects?cursor=${cursor}&wait=0`, /'wait' must be a whole number from 1 to 30/],
      [`/v1/projects?cursor=${cursor}&wait=31`, /'wait' must be a whole number from 1 to 30/],
      [`/v1/projects?cursor=${cursor}&wait=abc`, /'wait'/],
      ['/v1/projects?wait=5', /'wait' applies to delta mode/],
      ['/v1/projects?page=2&wait=5', /'wait' applies to delta mode/],
    ] as const) {
      const res = await h.get(url, key);
      assert.equal(res.status, 400, url);
      assert.equal(res.json().error.code, 'bad_request');
      assert.match(res.json().error.message, pattern, url);
    }
  });

  it('the sync_projects tool waits with waitSeconds the same way', async () => {
    const cursor = await bookmark();
    const waiting = h.services.projects.sync({ cursor, wait_seconds: 30 });
    assert.ok(await eventually(() => h.services.commits.waiting() === 1));
    await appendSightings(h.stores.log, { first: 400, count: 1, prefix: 'lp' });
    await h.stores.catchUp();
    const page = asValue(await waiting);
    assert.ok(page.ok);
    assert.deepEqual(
      page.value.projects.map((p) => p.id),
      ['lp-400'],
    );
    const idle = asValue(await h.services.projects.sync({ cursor: page.value.cursor, wait_seconds: 0 }));
    assert.ok(idle.ok && idle.value.projects.length === 0 && idle.value.cursor === page.value.cursor);
    const bad = await h.services.projects.sync({ cursor, wait_seconds: 31 });
    assert.ok(!bad.ok && bad.error.status === 400);

    // Over MCP: the tool argument is waitSeconds.
    const call = (args: Record<string, unknown>) =>
      h.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sync_projects', arguments: args } },
      });
    const held = call({ cursor: page.value.cursor, waitSeconds: 30 });
    assert.ok(await eventually(() => h.services.commits.waiting() === 1));
    await appendSightings(h.stores.log, { first: 401, count: 1, prefix: 'lp' });
    await h.stores.catchUp();
    // A 2025-era answer is JSON: the JSON-RPC message.
    const answer = await held;
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    const result = answer.json().result;
    assert.equal(result.isError ?? false, false);
    assert.deepEqual(
      result.structuredContent.projects.map((p: { id: string }) => p.id),
      ['lp-401'],
    );
    const refused = (await call({ cursor, waitSeconds: 31 })).json().result;
    assert.equal(refused.isError, true);
    assert.match(JSON.stringify(refused.content), /waitSeconds/);
  });
});

describe('shutdown', () => {
  it('ends a held long-poll at once with the empty page and the same cursor', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('mirror');
      await h.stores.catchUp();
      const cursor = (await h.get('/v1/projects?since=now', key)).json().cursor as string;
      const t0 = performance.now();
      const answer = h.app.inject({
        method: 'GET',
        url: `/v1/projects?cursor=${cursor}&wait=30`,
        headers: { authorization: `Bearer ${key}` },
      });
      assert.ok(await eventually(() => h.services.commits.waiting() === 1));
      await h.app.close();
      const res = await answer;
      assert.equal(res.statusCode, 200);
      assert.deepEqual(JSON.parse(res.body), { ...JSON.parse(res.body), projects: [], cursor, hasMore: false });
      assert.ok(performance.now() - t0 < 10_000, 'well before the 30 s wait');
    } finally {
      await h.close();
    }
  });
});

describe('a client that goes away', () => {
  it('ends its held long-poll, with include=changes as without', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('mirror');
      await h.stores.catchUp();
      const address = await h.app.listen({ port: 0, host: '127.0.0.1' });
      for (const include of ['', '&include=changes']) {
        const cursor = (await h.get('/v1/projects?since=now', key)).json().cursor as string;
        const gone = new AbortController();
        const held = fetch(`${address}/v1/projects?cursor=${cursor}&wait=30${include}`, {
          headers: { authorization: `Bearer ${key}` },
          signal: gone.signal,
        }).catch((error: unknown) => error);
        assert.ok(await eventually(() => h.services.commits.waiting() === 1), `held${include}`);
        gone.abort();
        await held;
        assert.ok(await eventually(() => h.services.commits.waiting() === 0), `no waiter left${include}`);
      }
    } finally {
      await h.close();
    }
  });
});
