/**
 * Results sized for a model (issue 58 item 5): every tool's default result, on generated data large
 * enough to fill every default page, is at most 20,000 characters of text (5,000 tokens); tools/list
 * is at most 26 KB, and what a model is shown of it (names, descriptions, input schemas) at most
 * 4,000 tokens (bytes / 4). The bench prints the same figures at 10k and 100k projects.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createIngestor } from '../../ingest/pipeline.ts';
import { generateLines } from '../../ingest/generate/generate.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { postRpc, rpcMessage, toolCall } from './support.ts';

const TEXT_MAX = 20_000;

describe('MCP results sized for a model, on generated data', () => {
  let h: Harness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_THESIS_FEED: 'on' } });
    key = await h.key('sizes', ['allow', 'link']);
    const ingestor = createIngestor(h.stores.log, { followerProvider: h.config.PULSEBOARD_FOLLOWER_PROVIDER });
    const options = {
      projects: 300,
      seed: 5,
      calls: 200,
      days: 14,
      hotContractCalls: 0,
      followerProvider: h.config.PULSEBOARD_FOLLOWER_PROVIDER,
    };
    for (const line of generateLines(options)) await ingestor.ingest(line, 'ndjson');
    await h.stores.catchUp();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  }, 120_000);
  afterAll(() => h.close());

  async function call(name: string, args: Record<string, unknown>): Promise<{ text: string; value: any }> {
    const answer = await rpcMessage(await postRpc(base, key, toolCall(name, args)));
    assert.equal(answer.result?.isError ?? false, false, `${name} ${JSON.stringify(args)}: ${JSON.stringify(answer)}`);
    return { text: answer.result.content[0].text as string, value: answer.result.structuredContent };
  }

  it('every tool at its defaults answers at most 20,000 characters of text, the largest subject included', async () => {
    const sizes = new Map<string, number>();
    const keep = (label: string, text: string) => sizes.set(label, Math.max(sizes.get(label) ?? 0, text.length));
    let biggest = { id: '', bytes: 0 };
    let first: string | undefined;
    for (let cursor: string | undefined, more = true; more;) {
      const page = await call('sync_projects', cursor === undefined ? {} : { cursor });
      keep('sync_projects', page.text);
      const full = await call('sync_projects', cursor === undefined ? { view: 'full' } : { cursor, view: 'full' });
      for (const project of full.value.projects as { id: string }[]) {
        const bytes = JSON.stringify(project).length;
        if (bytes > biggest.bytes) biggest = { id: project.id, bytes };
      }
      first ??= page.value.cursor as string;
      cursor = page.value.cursor as string;
      more = page.value.hasMore as boolean;
    }
    const board = await call('list_projects', {});
    for (let page = 1; page <= (board.value.totalPages as number); page++)
      keep('list_projects', (await call('list_projects', { page })).text);
    keep('diff_projects', (await call('diff_projects', { from: '2020-01-01T00:00:00Z' })).text);
    keep('get_project', (await call('get_project', { handle: biggest.id })).text);
    keep('search_projects', (await call('search_projects', { q: biggest.id })).text);
    keep('researcher_answers', (await call('researcher_answers', { handle: biggest.id })).text);
    keep('get_pulse', (await call('get_pulse', {})).text);
    let biggestCall = { id: '', bytes: 0 };
    for (let next: string | null | undefined; next !== null;) {
      const page = await call('list_calltracker_calls', next === undefined ? {} : { cursor: next });
      // A page never cuts a call: one that holds a single call is that record, bounded by the spec alone.
      keep(page.value.calls.length === 1 ? 'one call record' : 'list_calltracker_calls', page.text);
      for (const c of page.value.calls as { id: string }[]) {
        const bytes = JSON.stringify(c).length;
        if (bytes > biggestCall.bytes) biggestCall = { id: c.id, bytes };
      }
      next = page.value.next as string | null;
    }
    // One record: a 12,000-character thesis and 20 tokens come to about 20,000 characters (not bounded here).
    keep('one call record', (await call('get_calltracker_call', { id: biggestCall.id })).text);
    // The default pages were full: the bound was exercised, not met by a small data set.
    assert.equal(board.value.projects.length, 50);
    const over = [...sizes].filter(([label, chars]) => chars > TEXT_MAX && label !== 'one call record');
    assert.ok(sizes.get('list_calltracker_calls')! > 0);
    assert.deepEqual(over, [], JSON.stringify(Object.fromEntries(sizes)));
  });

  it('tools/list is at most 26 KB; names, descriptions and input schemas at most 4,000 tokens', async () => {
    const listed = await rpcMessage(await postRpc(base, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    const whole = Buffer.byteLength(JSON.stringify(listed));
    const shown = (listed.result.tools as { name: string; description: string; inputSchema: unknown }[]).map(
      ({ name, description, inputSchema }) => ({ name, description, inputSchema }),
    );
    const shownTokens = Math.round(Buffer.byteLength(JSON.stringify(shown)) / 4);
    assert.ok(whole <= 26 * 1024, `tools/list: ${whole} bytes`);
    assert.ok(shownTokens <= 4000, `names, descriptions, input schemas: ${shownTokens} tokens`);
  });

  it('the descriptions of the listing tools tell an agent that needs the whole board to run pulseboard mirror', async () => {
    const listed = await rpcMessage(await postRpc(base, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    for (const tool of listed.result.tools as { name: string; description: string }[])
      if (['list_projects', 'sync_projects', 'diff_projects'].includes(tool.name))
        assert.match(tool.description, /pulseboard mirror/, tool.name);
  });
});
