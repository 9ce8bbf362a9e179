import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { streams } from '../../events/streams.ts';
import { CONTEXTS_COLLECTION, type StoredContext } from '../../projectors/contexts.ts';
import { etagOf } from '../../api/http/caching.ts';
import { classifyQuery } from '../../service/search.ts';
import { appendSource, identity, sightProject, writeDossier } from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { createCheckedClient } from '../support/openapi-validator.ts';

const ALPHA_CONTRACT = '0xA1A1a1a1A1a1a1a1a1a1a1a1a1a1a1a1a1a1a1A1';
const SOL_CONTRACT = 'BetaSo1aNa11111111111111111111111111111111';
const MULTI = '0x4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d';
const DUP = '0xd0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0';

describe('GET /v1/search', () => {
  let h: Harness;
  let reader: string;
  let member: string;
  let client: Awaited<ReturnType<typeof createCheckedClient>>;
  let headBefore: number;

  beforeAll(async () => {
    h = await createHarness();
    reader = await h.key('reader');
    member = await h.key('member', ['allow']);
    await sightProject(h, {
      projectId: 'p-alpha',
      at: day(1),
      handle: 'Alpha',
      name: 'Alpha',
      identity: identity({
        kind: 'x',
        handle: 'alpha',
        website: 'https://www.Alpha.xyz/home',
        chain: 'base',
        contract: ALPHA_CONTRACT,
      }),
    });
    await sightProject(h, { projectId: 'p-beta', at: day(1), handle: 'beta' });
    await writeDossier(h, 'p-beta', day(2), {
      site: 'https://beta.io',
      token: { ticker: 'B', contract: SOL_CONTRACT, chain: 'sol' },
    });
    await sightProject(h, {
      projectId: 'p-multi-base',
      at: day(1),
      identity: identity({ chain: 'base', contract: MULTI }),
    });
    await sightProject(h, {
      projectId: 'p-multi-eth',
      at: day(1),
      identity: identity({ chain: 'ethereum', contract: MULTI }),
    });
    await sightProject(h, { projectId: 'p-dup-1', at: day(1), identity: identity({ chain: 'base', contract: DUP }) });
    await sightProject(h, {
      projectId: 'p-dup-2',
      at: day(1),
      identity: identity({ chain: 'Base', contract: DUP.toUpperCase().replace('0X', '0x') }),
    });
    await sightProject(h, {
      projectId: 'p-site-1',
      at: day(1),
      identity: identity({ kind: 'website', website: 'shared.example' }),
    });
    await sightProject(h, {
      projectId: 'p-site-2',
      at: day(1),
      identity: identity({ kind: 'website', website: 'https://www.shared.example/about' }),
    });
    await sightProject(h, { projectId: 'p-gamma', at: day(1), identity: identity({ kind: 'x', handle: '@GammaId' }) });
    await sightProject(h, { projectId: 'p-twin-1', at: day(1), identity: identity({ kind: 'x', handle: 'twinid' }) });
    await sightProject(h, { projectId: 'p-twin-2', at: day(1), identity: identity({ kind: 'x', handle: 'twinid' }) });
    await sightProject(h, { projectId: 'p-old', at: day(1), handle: 'reused' });
    await sightProject(h, { projectId: 'p-new', at: day(3), handle: 'reused' });
    await sightProject(h, { projectId: 'weird id', at: day(1) });
    // Research written for a project never sighted: not public, so never found.
    await writeDossier(h, 'p-ghost', day(2), { site: 'https://ghost.example' });
    for (const [voterId, direction] of [
      ['u1', 'up'],
      ['u2', 'up'],
      ['u3', 'down'],
    ] as const) {
      await appendSource(h, 'vote.cast', `vote-${voterId}`, streams.project('p-alpha'), {
        projectId: 'p-alpha',
        at: day(4),
        voterId,
        name: `Voter ${voterId}`,
        avatar: null,
        direction,
      });
    }
    await appendSource(h, 'research.updated', 'research-alpha', streams.project('p-alpha'), {
      projectId: 'p-alpha',
      at: day(4),
      state: 'researching',
    });
    await h.stores.catchUp();
    client = await createCheckedClient(h);
    headBefore = await h.stores.log.headPosition();
  });
  afterAll(() => h.close());

  const search = async (q: string, key = reader) => {
    const res = await client.get(`/v1/search?q=${encodeURIComponent(q)}`, key);
    assert.equal(res.status, 200, `${q}: ${res.body}`);
    return res.json();
  };
  const foundId = async (q: string) => {
    const body = await search(q);
    assert.equal(body.state, 'found', `${q} → ${body.state}`);
    assert.ok(body.context, `${q} has context`);
    return body.project.id;
  };

  it('finds by stable project id, which wins over every other reading', async () => {
    assert.equal(await foundId('p-alpha'), 'p-alpha');
    assert.equal(await foundId('weird id'), 'weird id');
  });

  it('finds by contract: 0x in any case, base58 from a dossier token', async () => {
    assert.equal(await foundId(ALPHA_CONTRACT), 'p-alpha');
    assert.equal(await foundId(ALPHA_CONTRACT.toLowerCase()), 'p-alpha');
    assert.equal(await foundId(SOL_CONTRACT), 'p-beta');
  });

  it('finds by chain:contract, with chain names and keys normalized', async () => {
    assert.equal(await foundId(`base:${ALPHA_CONTRACT}`), 'p-alpha');
    assert.equal(await foundId(`solana:${SOL_CONTRACT}`), 'p-beta');
    assert.equal(await foundId(`sol:${SOL_CONTRACT}`), 'p-beta');
    assert.equal(await foundId(`eth:${MULTI}`), 'p-multi-eth');
    assert.equal(await foundId(`Ethereum:${MULTI.toUpperCase().replace('0X', '0x')}`), 'p-multi-eth');
    assert.equal(await foundId(`base:${MULTI}`), 'p-multi-base');
    assert.equal((await search(`arbitrum:${MULTI}`)).state, 'missing');
  });

  it('finds by website: any URL or bare domain, on the lower-case host without www.', async () => {
    for (const q of [
      'https://www.alpha.xyz/anything?x=1',
      'alpha.xyz',
      'WWW.ALPHA.XYZ',
      'http://alpha.xyz',
      'alpha.xyz/pricing',
    ]) {
      assert.equal(await foundId(q), 'p-alpha', q);
    }
    assert.equal(await foundId('beta.io'), 'p-beta', 'a dossier site counts');
    assert.equal((await search('ghost.example')).state, 'missing', 'an unpublished project is never found');
  });

  it('finds by social profile: @name, name, x.com/name, twitter.com/name, with scheme or not', async () => {
    for (const q of [
      '@alpha',
      'alpha',
      'ALPHA',
      'x.com/alpha',
      'https://x.com/alpha',
      'https://twitter.com/alpha',
      'twitter.com/Alpha',
      'www.x.com/alpha/status/1',
      'https://mobile.twitter.com/@alpha',
    ]) {
      assert.equal(await foundId(q), 'p-alpha', q);
    }
    assert.equal(
      await foundId('@reused'),
      'p-new',
      'a reused handle finds its newest claimant, as GET /projects/@name does',
    );
    assert.equal(
      await foundId('@gammaid'),
      'p-gamma',
      'a submitted identity handle counts when no project claims the handle',
    );
  });

  it('answers missing, ambiguous and chain_required with project and context null', async () => {
    const cases: [string, string][] = [
      ['0xdead00000000000000000000000000000000beef', 'missing'],
      ['@nobody', 'missing'],
      ['nobody.example', 'missing'],
      [MULTI, 'chain_required'],
      [DUP, 'ambiguous'],
      [`base:${DUP}`, 'ambiguous'],
      ['shared.example', 'ambiguous'],
      ['@twinid', 'ambiguous'],
    ];
    for (const [q, state] of cases) {
      const body = await search(q);
      assert.equal(body.state, state, q);
      assert.equal(body.project, null);
      assert.equal(body.context, null);
    }
    // Such a body is made once per state and sent with each read's readAt: the very bytes of the value, and one validator.
    const first = await h.get(`/v1/search?q=${encodeURIComponent('@nobody')}`, reader);
    const again = await h.get(`/v1/search?q=${encodeURIComponent('nobody.example')}`, reader);
    for (const res of [first, again])
      assert.equal(
        res.body,
        JSON.stringify({ state: 'missing', project: null, context: null, readAt: res.json().readAt }),
      );
    assert.equal(again.headers.etag, first.headers.etag);
    assert.notEqual(
      (await h.get(`/v1/search?q=${MULTI}`, reader)).headers.etag,
      first.headers.etag,
      'another state, another body',
    );
  });

  it('adds context on found: votes, research, freshness; voter names only for an allowlisted key owner', async () => {
    const plain = await search('@alpha');
    assert.deepEqual(plain.context.votes, { up: 2, down: 1 });
    assert.equal(plain.context.voters, null);
    assert.deepEqual(plain.context.research, { state: 'researching', hasDossier: false, nextEligibleAt: null });
    assert.equal(plain.context.freshness.readAt, plain.readAt);
    const privileged = await search('@alpha', member);
    assert.deepEqual(privileged.context.voters.up.map((v: any) => v.name).sort(), ['Voter u1', 'Voter u2']);
    assert.deepEqual(privileged.context.voters.down, [{ name: 'Voter u3', avatar: null }]);
    assert.equal(privileged.context.voters.limitPerSide, 20);
  });

  it('refuses q missing, empty, blank, over 512 characters or in no accepted form with 400 naming q; accepts 512', async () => {
    const bad = [
      '/v1/search',
      '/v1/search?q=',
      '/v1/search?q=%20%20',
      `/v1/search?q=${'a'.repeat(513)}`,
      '/v1/search?q=hello%20world',
      '/v1/search?q=a&q=b',
    ];
    for (const url of bad) {
      const res = await client.get(url, reader);
      assert.equal(res.status, 400, url);
      assert.equal(res.json().error.code, 'bad_request');
      assert.match(res.json().error.message, /parameter 'q'/, url);
    }
    const unknown = await client.get('/v1/search?q=alpha&chain=base', reader);
    assert.equal(unknown.status, 400);
    assert.match(unknown.json().error.message, /unknown parameter 'chain'/);
    assert.equal((await search('a'.repeat(512))).state, 'missing');
    assert.equal((await client.get('/v1/search?q=alpha')).status, 401);
  });

  it('never appends an event, whatever it was asked', async () => {
    // Runs after the other cases in this suite: every search above has been made by now.
    assert.ok(client.checked > 40);
    assert.equal(await h.stores.log.headPosition(), headBefore);
  });
});

describe('search q forms', () => {
  it('reads each accepted form as intended', () => {
    assert.deepEqual(classifyQuery('base:0xabc'), { kind: 'chainContract', chain: 'base', contract: '0xabc' });
    assert.deepEqual(classifyQuery('https://x.com/foo'), { kind: 'social', handle: 'foo' });
    assert.deepEqual(classifyQuery('x.com'), { kind: 'website', host: 'x.com' });
    assert.deepEqual(classifyQuery('foo.near'), { kind: 'website', host: 'foo.near' });
    assert.deepEqual(classifyQuery('EQD4FPq-PRDieyQKkizFTRtSDyucUIqrj0v_zXJmqaDp6_0t'), {
      kind: 'contract',
      contract: 'EQD4FPq-PRDieyQKkizFTRtSDyucUIqrj0v_zXJmqaDp6_0t',
    });
    assert.deepEqual(classifyQuery('So11111111111111111111111111111111111111112'), {
      kind: 'contract',
      contract: 'So11111111111111111111111111111111111111112',
    });
    assert.deepEqual(classifyQuery('some_name'), { kind: 'social', handle: 'some_name' });
    assert.equal(classifyQuery('@'), null);
    assert.equal(classifyQuery('two words'), null);
  });
});

describe('search outcomes kept between reads', () => {
  it('keeps a found body per caller class while the contexts are unchanged, each read with its own times', async () => {
    let now = new Date('2026-03-01T10:00:00.000Z');
    const harness = await createHarness({ now: () => now });
    try {
      const plain = await harness.key('plain');
      const insider = await harness.key('insider', ['allow']);
      const vote = (voterId: string, direction: 'up' | 'down') =>
        appendSource(harness, 'vote.cast', `vote-${voterId}`, streams.project('p-kept'), {
          projectId: 'p-kept',
          at: day(2),
          voterId,
          name: `Voter ${voterId}`,
          avatar: null,
          direction,
        });
      await sightProject(harness, { projectId: 'p-kept', at: day(1), handle: 'kept' });
      await vote('k1', 'up');
      await harness.stores.catchUp();
      const read = async (key: string) => {
        const res = await harness.get('/v1/search?q=p-kept', key);
        assert.equal(res.status, 200, res.body);
        const body = res.json();
        // The bytes of the value, its validator over them without the top-level readAt.
        assert.equal(res.body, JSON.stringify(body));
        assert.equal(res.headers.etag, etagOf(res.body));
        assert.equal(body.context.freshness.readAt, body.readAt);
        return body;
      };
      assert.equal((await read(plain)).readAt, '2026-03-01T10:00:00.000Z');
      now = new Date('2026-03-01T10:00:01.000Z');
      const again = await read(plain);
      assert.equal(again.readAt, '2026-03-01T10:00:01.000Z');
      assert.equal(again.context.voters, null);
      assert.deepEqual(
        (await read(insider)).context.voters.up.map((v: { name: string }) => v.name),
        ['Voter k1'],
      );
      assert.equal((await read(plain)).context.voters, null, 'the allowlisted body is not served to others');
      // A vote moves the contexts checkpoint: the next search shows it.
      await vote('k2', 'down');
      await harness.stores.catchUp();
      assert.deepEqual((await read(plain)).context.votes, { up: 1, down: 1 });
      assert.deepEqual(
        (await read(insider)).context.voters.down.map((v: { name: string }) => v.name),
        ['Voter k2'],
      );
      // The contexts projector ahead of the projects one (its checkpoint alone moves): shown too.
      const store = harness.stores.store;
      const stored = (await store.get<StoredContext>(CONTEXTS_COLLECTION, 'p-kept'))!;
      const at = await store.checkpoint(CONTEXTS_COLLECTION);
      const write = {
        id: stored.id,
        doc: { ...stored.doc, votes: { up: 7, down: 1 } },
        state: stored.state ?? null,
        seq: stored.seq,
        writtenAt: stored.writtenAt,
        sortKey: stored.sortKey,
        facet: stored.facet,
        keys: stored.keys ?? {},
      };
      assert.deepEqual(await store.commit(CONTEXTS_COLLECTION, [write], at + 1, at), { ok: true });
      assert.deepEqual((await read(plain)).context.votes, { up: 7, down: 1 });
    } finally {
      await harness.close();
    }
  });

  it('follow every change of the projects read model: a project appearing, a second holder, a new handle claimant', async () => {
    const harness = await createHarness();
    try {
      const key = await harness.key('reader');
      const contract = '0x5555555555555555555555555555555555555555';
      const search = async (q: string) => {
        const res = await harness.get(`/v1/search?q=${encodeURIComponent(q)}`, key);
        assert.equal(res.status, 200, res.body);
        return res.json();
      };
      assert.equal((await search(contract)).state, 'missing');
      assert.equal((await search(contract)).state, 'missing', 'asked again');
      assert.equal((await search('@kept_handle')).state, 'missing');

      await sightProject(harness, {
        projectId: 'holder-1',
        at: day(1),
        handle: 'kept_handle',
        identity: identity({ chain: 'base', contract }),
      });
      await harness.stores.catchUp();
      const found = await search(contract);
      assert.equal(found.state, 'found');
      assert.equal(found.project.id, 'holder-1');
      assert.equal((await search('@kept_handle')).project.id, 'holder-1');

      await sightProject(harness, {
        projectId: 'holder-2',
        at: day(2),
        handle: 'kept_handle',
        identity: identity({ chain: 'base', contract }),
      });
      await harness.stores.catchUp();
      assert.equal((await search(contract)).state, 'ambiguous');
      assert.equal((await search('@kept_handle')).project.id, 'holder-2', 'the newest claimant of the handle');
    } finally {
      await harness.close();
    }
  });
});
