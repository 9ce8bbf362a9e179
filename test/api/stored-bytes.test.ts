/**
 * REST reads send stored JSON texts written into the envelope as they are; the bytes must be exactly those of
 * serialising the service's value (what the tool surface gets and what was sent before).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, it } from 'vitest';
import { createIngestor } from '../../ingest/pipeline.ts';
import { generateLines } from '../../ingest/generate/generate.ts';
import { PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import { asValue } from '../../service/json-body.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const NOW = new Date('2026-11-05T12:00:00.000Z');
let h: Harness;
let key: string;

beforeAll(async () => {
  h = await createHarness({ now: () => NOW });
  key = await h.key('reader');
  const ingestor = createIngestor(h.stores.log, { followerProvider: h.config.PULSEBOARD_FOLLOWER_PROVIDER });
  const options = {
    projects: 200,
    seed: 3,
    calls: 120,
    days: 10,
    hotContractCalls: 0,
    followerProvider: h.config.PULSEBOARD_FOLLOWER_PROVIDER,
  };
  for (const line of generateLines(options)) await ingestor.ingest(line, 'ndjson');
  await h.stores.catchUp();
});
afterAll(() => h.close());

async function sameBytes(url: string, value: () => Promise<{ ok: boolean; value?: unknown }>): Promise<string> {
  const res = await h.get(url, key);
  assert.equal(res.status, 200, `${url}: ${res.body}`);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  const read = await value();
  const expected = read.ok ? asValue(read as Parameters<typeof asValue>[0]) : read;
  assert.ok(expected.ok);
  assert.equal(res.body, JSON.stringify(expected.value), url);
  return res.body;
}

it('board pages, at the front, the middle and the end, are the bytes of the serialised page', async () => {
  const total = (await h.get('/v1/projects', key)).json().totalPages as number;
  assert.ok(total >= 3);
  for (const page of [1, 2, total - 1, total]) {
    for (const filter of ['', '&has_dossier=true', '&has_dossier=false']) {
      await sameBytes(`/v1/projects?page=${page}${filter}`, () =>
        h.services.projects.list({ page: String(page), ...(filter ? { has_dossier: filter.split('=')[1]! } : {}) }),
      );
    }
  }
});

it('delta pages are the bytes of the serialised page, page after page', async () => {
  let cursor: string | null = null;
  for (let i = 0; i < 5; i++) {
    const query: Record<string, string> = cursor
      ? { cursor, limit: '37' }
      : { since: '2000-01-01T00:00:00Z', limit: '37' };
    const body = await sameBytes(`/v1/projects?${new URLSearchParams(query)}`, () => h.services.projects.list(query));
    cursor = JSON.parse(body).cursor as string;
  }
});

it('one project, by id and by handle, with and without context, is the bytes of the serialised read', async () => {
  const rows = (
    await h.stores.store.list<{ id: string; handle: string | null }>(PROJECTS_COLLECTION, {
      facets: ['dossier', 'no_dossier'],
      offset: 0,
      limit: 5,
    })
  ).docs;
  for (const row of rows) {
    const caller = { owner: 'reader', keyId: 'x' };
    for (const handle of [row.id, ...(row.doc.handle ? [`@${row.doc.handle}`] : [])]) {
      await sameBytes(`/v1/projects/${encodeURIComponent(handle)}`, () =>
        h.services.projects.get(caller, { handle }, {}),
      );
    }
  }
});

it('call pages and searches are the bytes of the serialised result', async () => {
  const body = await sameBytes('/v1/calltracker/calls?limit=30', () =>
    h.services.calls.list({ limit: '30' }, { surface: 'rest' }),
  );
  const page = JSON.parse(body) as { calls: { tokens: { contract: string }[] }[]; next: string | null };
  assert.ok(page.calls.length > 0);
  if (page.next)
    await sameBytes(`/v1/calltracker/calls?cursor=${page.next}`, () =>
      h.services.calls.list({ cursor: page.next! }, { surface: 'rest' }),
    );
  const caller = { owner: 'reader', keyId: 'x' };
  const contract = page.calls.flatMap((c) => c.tokens)[0]!.contract;
  const project = (await h.get('/v1/projects', key)).json().projects[0] as { id: string };
  for (const q of [contract, project.id, 'example.org', '@nobody_here']) {
    await sameBytes(`/v1/search?q=${encodeURIComponent(q)}`, () => h.services.search.search(caller, { q }));
  }
});
