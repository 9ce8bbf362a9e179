import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { shortenThesis } from '../../projectors/calls.ts';
import { CURSOR_MAX } from '../../readmodels/schemas.ts';
import { makeCall, recordCall, thesisText, type CallPayload } from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { createCheckedClient } from '../support/openapi-validator.ts';
import { connectClient, postRpc, rpcMessage, seedBoard, toolCall } from './support.ts';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('sync_projects without a starting point, and since=now', () => {
  let h: Harness;
  let base: string;
  let key: string;
  let client: Client;

  beforeAll(async () => {
    h = await createHarness({ now: () => new Date('2026-11-20T08:00:00.000Z') });
    key = await h.key('mirror');
    await seedBoard(h);
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    client = await connectClient(base, key);
  });
  afterAll(async () => {
    await client.close();
    await h.close();
  });

  const sync = async (args: Record<string, unknown>) => {
    const result = await client.callTool({ name: 'sync_projects', arguments: args });
    assert.equal(result.isError ?? false, false, JSON.stringify(result.structuredContent));
    return result.structuredContent as { projects: { id: string }[]; cursor: string; hasMore: boolean; limit: number };
  };

  it('{} walks the whole archive by cursor, every project once', async () => {
    const seen: string[] = [];
    let page = await sync({ limit: 7 });
    seen.push(...page.projects.map((p) => p.id));
    let pages = 1;
    while (page.hasMore) {
      page = await sync({ cursor: page.cursor, limit: 7 });
      seen.push(...page.projects.map((p) => p.id));
      pages += 1;
    }
    assert.ok(pages >= 9, `${pages} pages`);
    const board = [1, 2].flatMap((n) =>
      h.get(`/v1/projects?page=${n}`, key).then((r) => r.json().projects.map((p: { id: string }) => p.id)),
    );
    const all = (await Promise.all(board)).flat();
    assert.equal(all.length, 60);
    assert.equal(new Set(seen).size, seen.length, 'no project twice');
    assert.deepEqual([...seen].sort(), [...all].sort());
    // And with no arguments at all: the first page of that same walk, at the tool's default size (30).
    const first = await sync({});
    assert.equal(first.limit, 30);
    assert.deepEqual(
      first.projects.map((p) => p.id),
      seen.slice(0, 30),
    );
  });

  it('since=now is an empty page whose cursor later yields only the writes after it, on REST and MCP alike', async () => {
    const now = await sync({ since: 'now' });
    assert.deepEqual(now.projects, []);
    assert.equal(now.hasMore, false);
    const rest = await h.get('/v1/projects?since=now&limit=30', key);
    assert.equal(rest.status, 200);
    assert.equal(rest.body, JSON.stringify(now));
    // Nothing new yet.
    assert.deepEqual((await sync({ cursor: now.cursor })).projects, []);

    await h.append('project.sighted', 's-p900', 'project-p900', {
      projectId: 'p900',
      at: '2026-11-19T00:00:00Z',
      handle: 'new900',
      fol: 1,
      name: 'New',
    });
    await h.append('project.sighted', 's-p005-again', 'project-p005', {
      projectId: 'p005',
      at: '2026-11-19T01:00:00Z',
      handle: 'h5',
      fol: 999,
      name: 'Project 5',
    });
    await h.stores.catchUp();
    const later = await sync({ cursor: now.cursor });
    assert.deepEqual(
      later.projects.map((p) => p.id),
      ['p900', 'p005'],
    );
    const viaRest = (await h.get(`/v1/projects?cursor=${now.cursor}`, key)).json();
    assert.deepEqual(
      viaRest.projects.map((p: { id: string }) => p.id),
      ['p900', 'p005'],
    );
    // Filters bind as with since: a has_dossier bookmark continues only with the same filter.
    const filtered = (await h.get('/v1/projects?since=now&has_dossier=true', key)).json();
    assert.equal((await h.get(`/v1/projects?cursor=${filtered.cursor}`, key)).status, 400);
    // since and cursor together stay refused.
    assert.equal((await h.get(`/v1/projects?since=now&cursor=${now.cursor}`, key)).status, 400);
  });
});

describe('maxBytes on call pages, REST and MCP', () => {
  let h: Harness;
  let base: string;
  let key: string;
  const calls: CallPayload[] = [];
  for (let n = 0; n < 14; n++) {
    // Escape-heavy theses: on MCP their escaped copy is much larger than their UTF-8 size.
    calls.push(
      makeCall(n, {
        createdAt: day(1, n),
        thesis: thesisText(5000 + n * 40, n, n % 2 === 0 ? 'escapes' : 'mixed'),
        tokens: 2,
      }),
    );
  }
  const newestFirst = [...calls].reverse().map((c) => c.id);
  const expectedText = new Map(calls.map((c) => [c.id, shortenThesis(c.thesisText, c.sourceUrl)]));
  const MAX = 40_000;

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('reader');
    for (const call of calls) await recordCall(h, call);
    await h.stores.catchUp();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  it('REST: each page is at most maxBytes, holds whole calls only, and paging reaches every call once', async () => {
    const checked = await createCheckedClient(h);
    const served: any[] = [];
    const sizes: number[] = [];
    const pages: any[] = [];
    let next: string | null = null;
    do {
      const res = await checked.get(
        `/v1/calltracker/calls?limit=30&maxBytes=${MAX}${next ? `&cursor=${next}` : ''}`,
        key,
      );
      assert.equal(res.status, 200);
      const page = res.json();
      pages.push(page);
      if (page.calls.length > 1) assert.ok(bytes(res.body) <= MAX, `page of ${bytes(res.body)} bytes`);
      sizes.push(page.calls.length);
      served.push(...page.calls);
      next = page.next;
    } while (next !== null);
    assert.ok(sizes.length >= 3 && sizes.every((n) => n < 30), `pages ${sizes.join(',')}: maxBytes ended them`);
    assert.deepEqual(
      served.map((c) => c.id),
      newestFirst,
    );
    for (const call of served) assert.equal(call.thesisText, expectedText.get(call.id));
    // As many as fit: no page could have taken the next call (measured with the longest `next`, as the service does).
    for (let i = 0; i < pages.length - 1; i++) {
      const withLongestNext = { ...pages[i], next: 'x'.repeat(CURSOR_MAX) };
      assert.ok(
        bytes(JSON.stringify(withLongestNext)) + 1 + bytes(JSON.stringify(pages[i + 1].calls[0])) > MAX,
        `page ${i} could hold one more`,
      );
    }
    // Without maxBytes, the 512 KiB default: one page.
    assert.equal((await checked.get('/v1/calltracker/calls?limit=30', key)).json().calls.length, 14);
  });

  it('MCP: the whole JSON-RPC response, escaped text block included, is at most maxBytes; paging reaches every call once', async () => {
    const served: any[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    for (let id = 1; ; id++) {
      const res = await postRpc(
        base,
        key,
        toolCall('list_calltracker_calls', { limit: 30, maxBytes: MAX, ...(cursor ? { cursor } : {}) }, id),
      );
      // The JSON-RPC message (a 2025-era answer travels as one SSE event around it).
      const text = JSON.stringify(await rpcMessage(res));
      const page = JSON.parse(text).result.structuredContent;
      if (page.calls.length > 1) assert.ok(bytes(text) <= MAX, `response of ${bytes(text)} bytes`);
      assert.equal(JSON.parse(text).result.content[0].text, JSON.stringify(page));
      sizes.push(page.calls.length);
      served.push(...page.calls);
      if (page.next === null) break;
      cursor = page.next;
    }
    assert.deepEqual(
      served.map((c) => c.id),
      newestFirst,
    );
    for (const call of served) assert.equal(call.thesisText, expectedText.get(call.id));
    // The escaped copy counts: MCP pages hold fewer calls than REST pages of the same maxBytes.
    let restPages = 0;
    for (let next: string | null | undefined; next !== null; restPages++) {
      next = (await h.get(`/v1/calltracker/calls?limit=30&maxBytes=${MAX}${next ? `&cursor=${next}` : ''}`, key)).json()
        .next;
    }
    assert.ok(sizes.length > restPages, `mcp ${sizes.length} pages vs rest ${restPages}`);
  });

  it('a maxBytes out of range or not a number is refused in the envelope on both surfaces', async () => {
    for (const value of ['100', '524289', 'lots']) {
      const rest = await h.get(`/v1/calltracker/calls?maxBytes=${value}`, key);
      assert.equal(rest.status, 400);
      assert.deepEqual(rest.json(), {
        error: { code: 'bad_request', message: "parameter 'maxBytes' must be a whole number from 4096 to 524288" },
      });
      const tool = await rpcMessage(
        await postRpc(
          base,
          key,
          toolCall('list_calltracker_calls', { maxBytes: value === 'lots' ? value : Number(value) }),
        ),
      );
      assert.equal(tool.result.isError, true);
      assert.deepEqual(tool.result.structuredContent, rest.json());
    }
  });
});
