import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { revokeKey, issueKey, hashKey, keyIdOf } from '../../service/access.ts';
import { boardPageSchema, syncPageSchema, projectReadSchema } from '../../readmodels/schemas.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { day } from '../support/events.ts';

const PROJECTS = 120;

async function seed(h: Harness) {
  for (let i = 0; i < PROJECTS; i++) {
    const id = `p${String(i).padStart(3, '0')}`;
    // Two projects share a first-seen time so ties (by id, descending) are exercised.
    const at = day(Math.floor(i / 2));
    await h.append('project.sighted', `s-${id}`, `project-${id}`, {
      projectId: id,
      at,
      handle: `h${i}`,
      fol: i * 10,
      name: `Project ${i}`,
    });
    if (i % 3 === 0) {
      await h.append('dossier.written', `d-${id}`, `project-${id}`, {
        projectId: id,
        at: day(Math.floor(i / 2), 1),
        dossier: {
          name: `Project ${i}`,
          category: 'defi',
          description: 'x',
          stage: 'live',
          confidence: 'low',
          chains: [],
          founders: [],
          backers: [],
          notable: [],
          token: null,
          links: { site: null, docs: null, github: null },
          unverified: [],
          onchain: null,
        },
      });
    }
  }
  await h.stores.catchUp();
}

describe('GET /v1/projects (board and delta)', () => {
  let h: Harness;
  let key: string;
  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('reader');
    await seed(h);
  });
  afterAll(() => h.close());

  it('serves page 1 with 50 projects, totals, newest first and ties by id', async () => {
    const res = await h.get('/v1/projects', key);
    assert.equal(res.status, 200);
    const body = res.json();
    assert.ok(boardPageSchema.safeParse(body).success);
    assert.equal(body.projects.length, 50);
    assert.equal(body.page, 1);
    assert.equal(body.pageSize, 50);
    assert.equal(body.total, PROJECTS);
    assert.equal(body.totalPages, 3);
    assert.deepEqual(
      body.projects.slice(0, 3).map((p: any) => p.id),
      ['p119', 'p118', 'p117'],
    );
    const pairs = body.projects.map((p: any) => [p.firstSeenByUs, p.id]);
    const sorted = [...pairs].sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? 1 : -1) : a[0] < b[0] ? 1 : -1));
    assert.deepEqual(pairs, sorted);
    const last = await h.get('/v1/projects?page=3', key);
    assert.equal(last.json().projects.length, 20);
    assert.equal((await h.get('/v1/projects?page=4', key)).json().projects.length, 0);
  });

  it('filters by has_dossier in both modes', async () => {
    const withDossier = (await h.get('/v1/projects?has_dossier=true', key)).json();
    assert.equal(withDossier.total, 40);
    assert.ok(withDossier.projects.every((p: any) => p.dossier !== null));
    const without = (await h.get('/v1/projects?has_dossier=false&page=2', key)).json();
    assert.equal(without.total, 80);
    assert.ok(without.projects.every((p: any) => p.dossier === null));
    const delta = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&has_dossier=true&limit=100', key)).json();
    assert.equal(delta.projects.length, 40);
  });

  it('refuses page with since or cursor, limit in page mode, and out-of-range values, naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      ['/v1/projects?page=1&since=2026-01-01T00:00:00Z', /page/],
      ['/v1/projects?page=0', /page/],
      ['/v1/projects?page=abc', /page/],
      ['/v1/projects?since=yesterday', /since/],
      ['/v1/projects?since=2026-01-01T00:00:00Z&limit=101', /limit/],
      ['/v1/projects?since=2026-01-01T00:00:00Z&limit=0', /limit/],
      ['/v1/projects?limit=10', /limit/],
      ['/v1/projects?has_dossier=maybe', /has_dossier/],
      ['/v1/projects?cursor=%%%', /cursor/],
      ['/v1/projects?cursor=' + 'a'.repeat(600), /cursor/],
      ['/v1/projects?bogus=1', /bogus/],
      ['/v1/projects?page=1&page=2', /page/],
    ];
    for (const [url, pattern] of cases) {
      const res = await h.get(url, key);
      assert.equal(res.status, 400, url);
      const body = res.json();
      assert.equal(body.error.code, 'bad_request', url);
      assert.match(body.error.message, pattern, url);
    }
  });

  it('pages through delta mode by cursor, each row once at its latest write, limit bounded', async () => {
    const seen: string[] = [];
    let url = '/v1/projects?since=2000-01-01T00:00:00Z&limit=7';
    for (let guard = 0; guard < 100; guard++) {
      const body = (await h.get(url, key)).json();
      assert.ok(syncPageSchema.safeParse(body).success);
      assert.ok(body.projects.length <= 7);
      seen.push(...body.projects.map((p: any) => p.id));
      assert.equal(typeof body.cursor, 'string');
      if (!body.hasMore) break;
      url = `/v1/projects?cursor=${body.cursor}&limit=7`;
    }
    assert.equal(seen.length, PROJECTS);
    assert.equal(new Set(seen).size, PROJECTS);
  });

  it('returns a cursor on an empty page, and a later write reappears after it', async () => {
    const first = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=100', key)).json();
    const second = (await h.get(`/v1/projects?cursor=${first.cursor}&limit=100`, key)).json();
    assert.equal(second.projects.length, PROJECTS - 100);
    assert.equal(second.hasMore, false);
    const empty = (await h.get(`/v1/projects?cursor=${second.cursor}`, key)).json();
    assert.deepEqual(empty.projects, []);
    assert.equal(empty.hasMore, false);
    assert.ok(empty.cursor.length > 0);
    await h.append('project.sighted', 'refresh-p005', 'project-p005', { projectId: 'p005', at: day(40), fol: 12345 });
    await h.stores.catchUp();
    const later = (await h.get(`/v1/projects?cursor=${empty.cursor}`, key)).json();
    assert.deepEqual(
      later.projects.map((p: any) => [p.id, p.fol]),
      [['p005', 12345]],
    );
  });

  it('refuses a cursor with other filters (400) and one from another archive (409)', async () => {
    const page = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=5', key)).json();
    const other = await h.get(`/v1/projects?cursor=${page.cursor}&has_dossier=true`, key);
    assert.equal(other.status, 400);
    assert.match(other.json().error.message, /has_dossier/);
    const foreign = await createHarness();
    try {
      const k = await foreign.key('x');
      const res = await foreign.get(`/v1/projects?cursor=${page.cursor}`, k);
      assert.equal(res.status, 409);
      assert.equal(res.json().error.code, 'conflict');
      assert.match(res.json().error.message, /since/);
    } finally {
      await foreign.close();
    }
  });

  it('reads a project by id or handle (case-insensitive, with @), 404 otherwise', async () => {
    const byId = await h.get('/v1/projects/p007', key);
    assert.equal(byId.status, 200);
    assert.ok(projectReadSchema.safeParse(byId.json()).success);
    assert.equal(byId.json().project.handle, 'h7');
    assert.equal(byId.json().context, undefined);
    assert.equal((await h.get('/v1/projects/H7', key)).json().project.id, 'p007');
    assert.equal((await h.get('/v1/projects/%40h7', key)).json().project.id, 'p007');
    const missing = await h.get('/v1/projects/nope', key);
    assert.equal(missing.status, 404);
    assert.deepEqual(Object.keys(missing.json().error), ['code', 'message']);
    assert.equal(missing.json().error.code, 'not_found');
    assert.equal((await h.get('/v1/projects/p007?include=votes', key)).status, 400);
  });
});

describe('handles, context and voters', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    await h.append('project.sighted', 'a1', 'project-a', { projectId: 'a', at: day(0), handle: 'shared' });
    await h.append('project.sighted', 'b1', 'project-b', { projectId: 'b', at: day(1), handle: 'other' });
    await h.append('project.sighted', 'a2', 'project-a', { projectId: 'a', at: day(2), handle: 'renamed' });
    await h.append('project.sighted', 'b2', 'project-b', { projectId: 'b', at: day(3), handle: 'SHARED' });
    for (let i = 0; i < 3; i++) {
      await h.append('vote.cast', `v${i}`, 'project-b', {
        projectId: 'b',
        at: day(4, i),
        voterId: `u${i}`,
        name: `User ${i}`,
        avatar: null,
        direction: i === 2 ? 'down' : 'up',
      });
    }
    await h.stores.catchUp();
  });
  afterAll(() => h.close());

  it('resolves a reused handle to the account that claimed it most recently; an id wins over a handle', async () => {
    const key = await h.key('r');
    assert.equal((await h.get('/v1/projects/shared', key)).json().project.id, 'b');
    assert.equal((await h.get('/v1/projects/renamed', key)).json().project.id, 'a');
    assert.equal((await h.get('/v1/projects/a', key)).json().project.handle, 'renamed');
  });

  it('shows voters only to an allowlisted key owner, null otherwise; counts to everyone', async () => {
    const plain = await h.key('plain');
    const allowed = await h.key('insider', ['allow']);
    const a = (await h.get('/v1/projects/b?include=context', plain)).json();
    assert.ok(projectReadSchema.safeParse(a).success);
    assert.deepEqual(a.context.votes, { up: 2, down: 1 });
    assert.equal(a.context.voters, null);
    assert.equal(a.context.research.state, 'not_requested');
    assert.equal(a.context.research.hasDossier, false);
    const b = (await h.get('/v1/projects/b?include=context', allowed)).json();
    assert.deepEqual(
      b.context.voters.up.map((v: any) => v.name),
      ['User 1', 'User 0'],
    );
    assert.equal(b.context.voters.limitPerSide, 20);
    // Allowlist is re-checked on every call.
    await h.key('insider', ['deny']);
    const c = (await h.get('/v1/projects/b?include=context', allowed)).json();
    assert.equal(c.context.voters, null);
  });
});

describe('authentication', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('gives every kind of failure the same status, headers and body', async () => {
    const revoked = await issueKey(h.stores, 'gone');
    await revokeKey(h.stores, revoked.keyId);
    const expired = await issueKey(h.stores, 'old', { expiresAt: '2020-01-01T00:00:00.000Z' });
    const unknown = `pbk_${'A'.repeat(43)}`;
    const variants: Record<string, Record<string, string>> = {
      missing: {},
      malformed: { authorization: 'Bearer not-a-key' },
      wrongScheme: { authorization: `Basic ${revoked.key}` },
      unknown: { authorization: `Bearer ${unknown}` },
      revoked: { authorization: `Bearer ${revoked.key}` },
      expired: { authorization: `Bearer ${expired.key}` },
    };
    const responses = [];
    for (const [name, headers] of Object.entries(variants)) {
      const res = await h.app.inject({ method: 'GET', url: '/v1/projects', headers });
      // The date and the request's own id differ per request whatever the key.
      const { date: _date, 'x-request-id': _requestId, ...rest } = res.headers;
      responses.push({ name, status: res.statusCode, headers: rest, body: res.body });
    }
    for (const r of responses) {
      assert.equal(r.status, 401, r.name);
      assert.deepEqual(r.headers, responses[0]!.headers, r.name);
      assert.equal(r.body, responses[0]!.body, r.name);
    }
    assert.deepEqual(JSON.parse(responses[0]!.body), {
      error: { code: 'unauthorized', message: 'Missing or invalid API key.' },
    });
    // Only a hash is stored: the key text appears nowhere in the log.
    const events = await h.stores.log.readAll({ afterPosition: 0, limit: 1000 });
    assert.ok(!JSON.stringify(events).includes(revoked.key));
    assert.ok(JSON.stringify(events).includes(hashKey(revoked.key)));
    assert.equal(revoked.keyId, keyIdOf(hashKey(revoked.key)));
  });

  it('applies a revocation on the very next request', async () => {
    const k = await issueKey(h.stores, 'soon-gone');
    assert.equal((await h.get('/v1/projects', k.key)).status, 200);
    await revokeKey(h.stores, k.keyId);
    assert.equal((await h.get('/v1/projects', k.key)).status, 401);
  });

  it('answers unknown routes and wrong methods in the error envelope', async () => {
    const key = await h.key('x');
    const unknown = await h.get('/v1/nothing', key);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json().error.code, 'not_found');
    const wrong = await h.app.inject({
      method: 'DELETE',
      url: '/v1/projects',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(wrong.statusCode, 405);
    assert.equal(wrong.headers.allow, 'GET');
    assert.equal(JSON.parse(wrong.body).error.code, 'bad_request');
  });
});
