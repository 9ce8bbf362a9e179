/**
 * The cache of rendered bodies: a read served again from kept bytes is the body a fresh read gives
 * (with its own readAt), a commit makes the next read return the new bytes and ETag, and reads whose
 * bytes depend on the caller (context, search) or that wait (long-poll) are never kept in it.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createBodyCache } from '../../service/body-cache.ts';
import { jsonBody, validatorOf } from '../../service/json-body.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const withoutReadAt = (text: string) => ({ ...JSON.parse(text), readAt: null });

async function sight(h: Harness, id: string, name: string, at = day(1)) {
  await h.append('project.sighted', `s-${id}-${name}`, `project-${id}`, { projectId: id, at, handle: `h_${id}`, name });
  await h.stores.catchUp();
}

describe('rendered bodies kept per read-model checkpoint', () => {
  let h: Harness;
  let key: string;
  beforeAll(async () => {
    let clock = Date.parse('2026-11-01T00:00:00.000Z');
    // Every read gets a later readAt, so a kept body is seen to carry its own.
    h = await createHarness({ now: () => new Date((clock += 1000)) });
    key = await h.key('reader');
    for (let i = 0; i < 5; i++) await sight(h, `p${i}`, `Project ${i}`, day(i));
  });
  afterAll(() => h.close());

  it('a board page read again comes from the cache: same bytes but readAt, same ETag, a later readAt', async () => {
    const first = await h.get('/v1/projects?page=1', key);
    const entries = h.services.bodies.stats().entries;
    await h.get('/v1/projects?page=1', key);
    assert.equal(h.services.bodies.stats().entries, entries + 1, 'kept from its second read on');
    const hits = h.services.bodies.stats().hits;
    const again = await h.get('/v1/projects?page=1', key);
    assert.equal(h.services.bodies.stats().hits, hits + 1, 'served from the cache');
    assert.deepEqual(withoutReadAt(again.body), withoutReadAt(first.body));
    assert.equal(again.headers.etag, first.headers.etag);
    assert.ok(again.json().readAt > first.json().readAt, 'readAt is the time of this read');
    // The validator is the one made from the body text without its readAt.
    const text = again.body;
    const at = text.lastIndexOf('"readAt":"') + '"readAt":"'.length;
    assert.equal(again.headers.etag, validatorOf(text.slice(0, at), text.slice(text.indexOf('"', at))));
  });

  it('a commit invalidates: the next read returns the new bytes and a new ETag (board, delta, one project)', async () => {
    const urls = ['/v1/projects?page=1', '/v1/projects?since=1970-01-01T00:00:00Z&limit=100', '/v1/projects/p1'];
    const before = await Promise.all(urls.map((u) => h.get(u, key)));
    const kept = await Promise.all(urls.map((u) => h.get(u, key)));
    kept.forEach((res, i) => assert.equal(res.headers.etag, before[i]!.headers.etag));
    await sight(h, 'p1', 'Renamed');
    for (const [i, url] of urls.entries()) {
      const after = await h.get(url, key);
      assert.equal(after.status, 200);
      assert.notEqual(after.headers.etag, before[i]!.headers.etag, `${url}: a new ETag after the commit`);
      assert.ok(after.body.includes('"Renamed"'), `${url}: the new bytes`);
      assert.ok(!after.body.includes('"Project 1"'), `${url}: not the old bytes`);
      // The old ETag no longer answers 304.
      const revalidated = await h.app.inject({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${key}`, 'if-none-match': String(before[i]!.headers.etag) },
      });
      assert.equal(revalidated.statusCode, 200);
    }
  });

  it('caller-dependent reads (include=context, search) and long-polls are never kept', async () => {
    const entries = () => h.services.bodies.stats().entries;
    await h.get('/v1/projects?page=1', key);
    const kept = entries();
    const plain = await h.key('plain');
    const insider = await h.key('insider', ['allow']);
    for (const url of [
      '/v1/projects/p2?include=context',
      '/v1/search?q=p2',
      '/v1/projects?since=1970-01-01T00:00:00Z&wait=1',
    ]) {
      for (const k of [plain, insider]) assert.equal((await h.get(url, k)).status, 200, url);
    }
    assert.equal(entries(), kept, 'nothing kept for them');
    // Voters stay per caller: null for a key owner that is not allowlisted.
    assert.equal((await h.get('/v1/projects/p2?include=context', plain)).json().context.voters, null);
    assert.notEqual((await h.get('/v1/projects/p2?include=context', insider)).json().context.voters, null);
  });

  it('errors are not kept: an unknown project answers 404 each time, and 200 once it exists', async () => {
    assert.equal((await h.get('/v1/projects/late', key)).status, 404);
    assert.equal((await h.get('/v1/projects/late', key)).status, 404);
    await sight(h, 'late', 'Late');
    assert.equal((await h.get('/v1/projects/late', key)).status, 200);
  });
});

describe('createBodyCache', () => {
  const parts = (n: number) => ({
    head: Buffer.alloc(n, 97),
    tail: Buffer.from('"}'),
    readAt: '',
    etag: 'W/"x"',
    value: () => null,
  });

  it('serves an entry only at the version it was kept under; a newer version empties it; an older one neither reads nor fills', () => {
    const cache = createBodyCache({ maxBytes: 1 << 20 });
    cache.set([0, 5], 'a', parts(10));
    assert.ok(cache.get([0, 5], 'a'));
    assert.equal(cache.get([0, 6], 'a'), undefined, 'a commit since: not served');
    assert.equal(cache.stats().entries, 0);
    cache.set([0, 5], 'b', parts(10));
    assert.equal(cache.stats().entries, 0, 'a request that read the older checkpoint keeps nothing');
    cache.set([1, 2], 'c', parts(10));
    assert.equal(
      cache.get([0, 6], 'c'),
      undefined,
      'a newer generation wins over a higher checkpoint of the older one',
    );
    assert.ok(cache.get([1, 2], 'c'));
  });

  it('with keepAfterMisses 2, keeps a body from its second miss on; a new version counts again', () => {
    const cache = createBodyCache({ maxBytes: 1 << 20, keepAfterMisses: 2 });
    assert.equal(cache.get([0, 1], 'once'), undefined);
    cache.set([0, 1], 'once', parts(10));
    assert.equal(cache.get([0, 1], 'once'), undefined, 'asked once: not kept');
    cache.set([0, 1], 'once', parts(10));
    assert.ok(cache.get([0, 1], 'once'), 'asked twice: kept');
    assert.equal(cache.get([0, 2], 'once'), undefined, 'a commit since');
    cache.set([0, 2], 'once', parts(10));
    assert.equal(cache.stats().entries, 0, 'one miss under the new version keeps nothing');
    cache.set([0, 2], 'never-asked', parts(10));
    assert.equal(cache.stats().entries, 0, 'a key that never missed is not kept');
  });

  it('stays within its byte bound, a body not asked for since it was kept out first, and keeps no body over an eighth of it', () => {
    const cache = createBodyCache({ maxBytes: 10_000 });
    cache.set([0, 1], 'big', parts(2_000));
    assert.equal(cache.stats().entries, 0);
    for (let i = 0; i < 20; i++) {
      cache.set([0, 1], `k${i}`, parts(1_000));
      if (i === 5) cache.get([0, 1], 'k0');
    }
    assert.ok(cache.stats().bytes <= 10_000, `${cache.stats().bytes} bytes`);
    assert.ok(cache.get([0, 1], 'k19'), 'the newest stays');
    assert.equal(cache.get([0, 1], 'k1'), undefined, 'the oldest went first');
  });

  it('gives a body asked for since it was kept a second chance before the others', () => {
    const cache = createBodyCache({ maxBytes: 10_000 });
    for (let i = 0; i < 9; i++) cache.set([0, 1], `k${i}`, parts(1_000)); // nine fit
    assert.ok(cache.get([0, 1], 'k0'));
    assert.ok(cache.get([0, 1], 'k2'));
    // Past the bound: k1 and k3 (never asked for) go, k0 and k2 stay and move behind the rest.
    for (let i = 9; i < 11; i++) cache.set([0, 1], `k${i}`, parts(1_000));
    assert.ok(cache.stats().bytes <= 10_000, `${cache.stats().bytes} bytes`);
    assert.equal(cache.get([0, 1], 'k1'), undefined);
    assert.equal(cache.get([0, 1], 'k3'), undefined);
    assert.ok(cache.get([0, 1], 'k0'), 'asked for since it was kept: kept');
    assert.ok(cache.get([0, 1], 'k2'), 'asked for since it was kept: kept');
    // Once moved its flag is cleared: with no new ask it goes out like any other.
    const again = createBodyCache({ maxBytes: 8_000 });
    for (let i = 0; i < 8; i++) again.set([0, 1], `a${i}`, parts(900)); // eight fit
    assert.ok(again.get([0, 1], 'a0'));
    // b0 is kept, then a0 moves behind it and a1 goes; then a2…a7 and b0 go, one per new body.
    for (let i = 0; i < 8; i++) again.set([0, 1], `b${i}`, parts(900));
    assert.equal(again.stats().entries, 8);
    again.set([0, 1], 'b8', parts(900));
    assert.equal(again.get([0, 1], 'a0'), undefined, 'its second chance was used up');
    for (let i = 1; i < 9; i++) assert.ok(again.get([0, 1], `b${i}`));
  });

  it('keeps the bytes of a body, not what it was made from: its value is parsed from them', () => {
    const cache = createBodyCache();
    let rowsRead = 0;
    const rows = {
      raw: true as const,
      bytes: () => Buffer.from('[{"id":"a"}]'),
      value: () => {
        rowsRead += 1;
        return [{ id: 'a' }];
      },
    };
    const readAt = '2026-01-01T00:00:00.000Z';
    cache.set(
      [0, 1],
      'k',
      jsonBody<{ projects: { id: string }[]; readAt: string }, 'projects'>({ projects: rows, readAt }),
    );
    const kept = cache.get([0, 1], 'k')!;
    assert.deepEqual(kept.value(), { projects: [{ id: 'a' }], readAt });
    assert.equal(rowsRead, 0, 'its value comes from its bytes');
  });
});
