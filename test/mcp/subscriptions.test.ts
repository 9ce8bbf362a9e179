import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { mcpPlugin } from '../../mcp/plugin.ts';
import { issueKey, revokeKey } from '../../service/access.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { postListen } from '../support/mcp-listen.ts';
import { seedBoard } from './support.ts';

/** Reads a stream until `done` says the text so far is enough, or `ms` pass. */
async function readUntil(res: Response, done: (text: string) => boolean, ms: number): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + ms;
  while (!done(text) && Date.now() < deadline) {
    const chunk = await Promise.race([
      reader.read(),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), deadline - Date.now())),
    ]);
    if (chunk === null || chunk.done) break;
    text += decoder.decode(chunk.value, { stream: true });
  }
  reader.releaseLock();
  return text;
}

async function connect(base: string, key: string): Promise<Client> {
  const client = new Client({ name: 'listener', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

describe('subscriptions/listen on /mcp (2026-07-28)', () => {
  let h: Harness;
  let app: FastifyInstance;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('listener');
    await seedBoard(h);
    // The plugin on its own instance, with a short heartbeat and key re-check.
    app = Fastify();
    await app.register(mcpPlugin, { services: h.services, listen: { keepAliveMs: 200, recheckMs: 300 } });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app.close();
    await h.close();
  });

  it('a committed write to a subscribed project sends resources/updated for its URI, and the board list-changed; others are not sent', async () => {
    const client = await connect(base, key);
    const updated: string[] = [];
    let listChanged = 0;
    client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    client.setNotificationHandler('notifications/resources/list_changed', () => void (listChanged += 1));
    try {
      const subscription = await client.listen({
        resourceSubscriptions: ['pulseboard://projects/p001'],
        resourcesListChanged: true,
      });
      assert.deepEqual(subscription.honoredFilter, {
        resourceSubscriptions: ['pulseboard://projects/p001'],
        resourcesListChanged: true,
      });
      await h.append('project.sighted', 's-p002-again', 'project-p002', {
        projectId: 'p002',
        at: '2026-11-21T00:00:00Z',
        handle: 'h2',
        fol: 999,
        name: 'Two',
      });
      await h.append('project.sighted', 's-p001-again', 'project-p001', {
        projectId: 'p001',
        at: '2026-11-21T00:00:00Z',
        handle: 'h1',
        fol: 1000,
        name: 'One',
      });
      await h.stores.catchUp();
      for (let i = 0; i < 50 && (updated.length === 0 || listChanged === 0); i++)
        await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(updated, ['pulseboard://projects/p001']);
      assert.ok(listChanged >= 1);
      await subscription.close();
      assert.equal(await subscription.closed, 'local');
    } finally {
      await client.close();
    }
  });

  it('sends a heartbeat while idle', async () => {
    const stop = new AbortController();
    const res = await postListen(base, key, stop.signal);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await readUntil(res, (t) => t.includes(': keepalive'), 5_000);
    assert.match(text, /notifications\/subscriptions\/acknowledged/);
    assert.match(text, /: keepalive/);
    stop.abort();
  });

  it('allows 2 open listens per key on an instance; the third is 429 in the envelope, and a slot is free again once one closes', async () => {
    const own = await issueKey(h.stores, 'bounded');
    const stops = [new AbortController(), new AbortController()];
    const open = await Promise.all(stops.map((stop) => postListen(base, own.key, stop.signal)));
    for (const res of open) assert.equal(res.status, 200);
    for (const res of open) await readUntil(res, (t) => t.includes('acknowledged'), 5_000);
    const third = await postListen(base, own.key, new AbortController().signal);
    assert.equal(third.status, 429);
    assert.ok(Number(third.headers.get('retry-after')) >= 1);
    const body = (await third.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'rate_limited');
    assert.match(body.error.message, /At most 2 subscriptions\/listen streams/);
    // Another key is not affected.
    const other = new AbortController();
    assert.equal((await postListen(base, key, other.signal)).status, 200);
    other.abort();
    stops[0]!.abort();
    let again: Response | undefined;
    for (let i = 0; i < 50; i++) {
      again = await postListen(
        base,
        own.key,
        stops[0]!.signal.aborted ? new AbortController().signal : stops[0]!.signal,
      );
      if (again.status === 200) break;
      await again.body?.cancel();
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(again?.status, 200);
    await again?.body?.cancel();
    stops[1]!.abort();
  });

  it('closes an open listen once its key is revoked', async () => {
    const leaving = await issueKey(h.stores, 'leaving');
    const client = await connect(base, leaving.key);
    try {
      const subscription = await client.listen({ resourcesListChanged: true });
      await revokeKey(h.stores, leaving.keyId);
      const how = await Promise.race([
        subscription.closed,
        new Promise((r) => setTimeout(() => r('still open'), 10_000)),
      ]);
      assert.notEqual(how, 'still open');
      assert.notEqual(how, 'local');
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('is refused to a 2025 client: its handshake offers no subscriptions', async () => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'resources/subscribe',
        params: { uri: 'pulseboard://projects/p001' },
      }),
    });
    const text = await res.text();
    assert.match(text, /"error":\{"code":-32601/);
  });
});
