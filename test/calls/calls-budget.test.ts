import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { shortenThesis } from '../../projectors/calls.ts';
import { CALL_PAGE_BUDGET_BYTES } from '../../service/calls.ts';
import { CURSOR_MAX, THESIS_TEXT_MAX } from '../../readmodels/schemas.ts';
import { makeCall, recordCall, thesisText, token, type CallPayload } from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { createCheckedClient } from '../support/openapi-validator.ts';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
/** What the tool-protocol surface sends of a page: the structured copy plus the page as an escaped JSON string. */
const mcpBytes = (page: unknown) => bytes(JSON.stringify(page)) + bytes(JSON.stringify(JSON.stringify(page)));

/**
 * A data set at the limits: theses of 11,990 to 12,000 characters (CJK, emoji, quotes, backslashes,
 * control characters), some over the limit as ingest accepts them, and 20 tokens on every call.
 */
function dataSet(): CallPayload[] {
  const calls: CallPayload[] = [];
  for (let n = 0; n < 64; n++) {
    const style = n % 5 === 0 ? 'escapes' : 'mixed';
    const length = n % 9 === 0 ? 15_000 + n : THESIS_TEXT_MAX - (n % 11);
    calls.push(makeCall(n, { createdAt: day(1, n), thesis: thesisText(length, n, style), tokens: 20 }));
  }
  return calls;
}

describe('call pages within the 512 KiB budget', () => {
  let h: Harness;
  let key: string;
  let client: Awaited<ReturnType<typeof createCheckedClient>>;
  const calls = dataSet();
  const expectedText = new Map(calls.map((c) => [c.id, shortenThesis(c.thesisText, c.sourceUrl)]));
  const newestFirst = [...calls].reverse().map((c) => c.id);

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('reader');
    for (const call of calls) await recordCall(h, call);
    await h.stores.catchUp();
    client = await createCheckedClient(h);
  });
  afterAll(() => h.close());

  it('REST: every page fits 512 KiB serialized, holds as many whole calls as fit, no text is cut, every call comes once', async () => {
    const served: any[] = [];
    let next: string | null = null;
    let shortPages = 0;
    const pages: any[] = [];
    do {
      const res = await client.get(`/v1/calltracker/calls?limit=30${next ? `&cursor=${next}` : ''}`, key);
      assert.equal(res.status, 200);
      assert.ok(bytes(res.body) <= CALL_PAGE_BUDGET_BYTES, `page of ${bytes(res.body)} bytes`);
      const page = res.json();
      pages.push(page);
      served.push(...page.calls);
      if (page.next !== null && page.calls.length < 30) shortPages += 1;
      next = page.next;
    } while (next !== null);

    assert.ok(shortPages >= 2, 'the budget, not the limit, ended several pages');
    assert.deepEqual(
      served.map((c) => c.id),
      newestFirst,
    );
    for (const call of served) {
      assert.equal(call.thesisText, expectedText.get(call.id), `thesis of ${call.id}`);
      assert.equal(call.tokens.length, 20);
    }
    assert.ok(
      served.some((c) => c.thesisText.length === THESIS_TEXT_MAX && c.thesisText.includes('[Shortened to fit')),
    );
    // Maximal: a page the budget ended could not have taken the next call (measured with the longest `next`).
    for (let i = 0; i < pages.length - 1; i++) {
      if (pages[i].calls.length === 30) continue;
      const withLongestNext = { ...pages[i], next: 'x'.repeat(CURSOR_MAX) };
      const following = pages[i + 1].calls[0];
      assert.ok(
        bytes(JSON.stringify(withLongestNext)) + 1 + bytes(JSON.stringify(following)) > CALL_PAGE_BUDGET_BYTES,
        `page ${i} could hold one more`,
      );
    }
  });

  it('MCP surface: the page and its escaped copy together fit 512 KiB, so pages are shorter, and paging still reaches every call once', async () => {
    const served: any[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const result = await h.services.calls.list({ limit: 30, ...(cursor ? { cursor } : {}) }, { surface: 'mcp' });
      assert.ok(result.ok);
      const page = result.value.value();
      assert.ok(mcpBytes(page) <= CALL_PAGE_BUDGET_BYTES, `mcp page of ${mcpBytes(page)} bytes`);
      served.push(...page.calls);
      pages += 1;
      if (page.next === null) break;
      cursor = page.next;
    }
    assert.deepEqual(
      served.map((c) => c.id),
      newestFirst,
    );
    for (const call of served) assert.equal(call.thesisText, expectedText.get(call.id));
    let restPages = 0;
    for (let next: string | null | undefined; next !== null; restPages++) {
      const result = await h.services.calls.list({ limit: 30, ...(next ? { cursor: next } : {}) }, { surface: 'rest' });
      assert.ok(result.ok);
      next = result.value.value().next;
    }
    assert.ok(pages > restPages, `mcp ${pages} pages vs rest ${restPages}`);
  });
});

describe('a call larger than the budget', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    const huge = Array.from({ length: 20 }, (_, i) => token(i, { description: '描述'.repeat(15_000) }));
    await recordCall(h, makeCall(1, { createdAt: day(1), tokens: 2 }));
    await recordCall(h, makeCall(2, { createdAt: day(2), tokens: huge }));
    await recordCall(h, makeCall(3, { createdAt: day(3), tokens: 2 }));
    await h.stores.catchUp();
  });
  afterAll(() => h.close());

  it('is served whole on a page of its own, and paging goes on past it', async () => {
    const key = await h.key('reader');
    const client = await createCheckedClient(h);
    const first = (await client.get('/v1/calltracker/calls', key)).json();
    assert.equal(first.calls.length, 1, 'the call before it ends the page');
    const second = await client.get(`/v1/calltracker/calls?cursor=${first.next}`, key);
    assert.equal(second.json().calls.length, 1);
    assert.ok(bytes(second.body) > CALL_PAGE_BUDGET_BYTES);
    assert.equal(second.json().calls[0].tokens[0].description, '描述'.repeat(15_000));
    const third = (await client.get(`/v1/calltracker/calls?cursor=${second.json().next}`, key)).json();
    assert.equal(third.calls.length, 1);
    assert.equal(third.next, null);
  });
});
