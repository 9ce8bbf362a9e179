import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createThesisReader } from '../../ingest/thesis-reader/reader.ts';
import { createSampleThesisSource } from '../../ingest/thesis-reader/sample-source.ts';
import { createInProcessHeartbeat } from '../../service/thesis/in-process-heartbeat.ts';
import { makeCall, recordCall } from '../support/calls-fixtures.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { connectClient, seedBoard } from '../mcp/support.ts';

const CONTRACT = `0x${'ab'.repeat(20)}`;

describe('thesis feed over REST and MCP, and where thesis text may appear', () => {
  let h: Harness;
  let base: string;
  let member: string;
  let client: Client;
  const logLines: string[] = [];
  const nonThesisBodies: string[] = [];
  const heartbeat = createInProcessHeartbeat();

  beforeAll(async () => {
    h = await createHarness({ heartbeat, logStream: { write: (line) => void logLines.push(line) } });
    await seedBoard(h);
    await recordCall(h, makeCall(1, { createdAt: '2026-11-01T00:00:00.000Z' }));
    await h.stores.catchUp();
    member = await h.key('member', ['allow', 'link']);
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    client = await connectClient(base, member);
  });
  afterAll(async () => {
    await client.close();
    await h.close();
  });

  it('queues over REST (202), serves the snapshot after the reader ran, and MCP returns the same bodies', async () => {
    await heartbeat.beat();
    const post = await h.app.inject({
      method: 'POST',
      url: '/v1/thesisfeed/theses',
      headers: { authorization: `Bearer ${member}` },
      payload: { contract: CONTRACT },
    });
    assert.equal(post.statusCode, 202);
    assert.equal(post.headers['cache-control'], 'private, no-store');
    assert.equal(JSON.parse(post.body).status, 'queued');

    const again = await client.callTool({ name: 'request_thesis_feed', arguments: { contract: CONTRACT } });
    assert.equal((again.structuredContent as any).status, 'queued', 'a POST while pending creates nothing new');

    const reader = createThesisReader({
      log: h.stores.log,
      store: h.stores.store,
      source: createSampleThesisSource(),
      heartbeat,
    });
    await reader.runOnce();
    await h.stores.catchUp();

    const rest = await h.get(`/v1/thesisfeed/theses?contract=${CONTRACT}`, member);
    assert.equal(rest.status, 200);
    const status = rest.json();
    assert.equal(status.status, 'ready');
    assert.ok(status.snapshot.items.length > 0);
    assert.ok(status.snapshot.items.every((i: any) => i.trade.usdValue >= 1000));
    const tool = await client.callTool({ name: 'get_thesis_feed', arguments: { contract: CONTRACT } });
    // checkedAt is the read time: compare everything else.
    assert.deepEqual({ ...(tool.structuredContent as any), checkedAt: null }, { ...status, checkedAt: null });

    // A fresh snapshot is a shared cache hit: 200, nothing appended.
    const head = await h.stores.log.headPosition();
    const hit = await h.app.inject({
      method: 'POST',
      url: '/v1/thesisfeed/theses',
      headers: { authorization: `Bearer ${member}` },
      payload: { contract: CONTRACT },
    });
    assert.equal(hit.statusCode, 200);
    assert.equal(await h.stores.log.headPosition(), head);

    // Every other read, on both surfaces, while the snapshot exists.
    const urls = [
      '/v1/projects',
      '/v1/projects?since=2000-01-01T00:00:00Z',
      '/v1/projects/h1?include=context',
      '/v1/search?q=h1',
      '/v1/pulse',
      '/v1/calltracker/calls',
      '/v1/projects/h1/ask',
    ];
    for (const url of urls) nonThesisBodies.push((await h.get(url, member)).body);
    for (const [name, args] of [
      ['list_projects', {}],
      ['search_projects', { q: 'h2' }],
      ['get_project', { handle: 'h2', include: 'context' }],
      ['get_pulse', {}],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      nonThesisBodies.push(JSON.stringify(result));
    }
    const texts: string[] = status.snapshot.items.map((i: any) => i.text);
    for (const text of texts) {
      for (const body of nonThesisBodies)
        assert.ok(!body.includes(text), 'no thesis item text in a non-thesis response');
      for (const line of logLines) assert.ok(!line.includes(text), 'no thesis item text in the log');
    }
    assert.ok(logLines.length > 10, 'the log was captured');
    // Call thesis text appears only in call-record responses.
    const callText = 'Call 1: thesis.';
    for (const body of nonThesisBodies.filter((b) => !b.includes('"calls"'))) assert.ok(!body.includes(callText));
    for (const line of logLines) assert.ok(!line.includes(callText));
  });
});
