/**
 * A revoked key stops reading at once on every request it holds open: the change stream, the
 * long-poll and the MCP listen. Writes made after the revocation never reach it.
 */
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Fastify from 'fastify';
import { describe, it } from 'vitest';
import { mcpPlugin } from '../../mcp/plugin.ts';
import { issueKey, revokeKey } from '../../service/access.ts';
import { eventually } from '../replay/support.ts';
import { createHarness } from '../support/harness.ts';
import { postListen } from '../support/mcp-listen.ts';
import { appendSightings, openStream, type SseClient } from './support.ts';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const ENVELOPE = { error: { code: 'unauthorized', message: 'Missing or invalid API key.' } };

/** Whether the stream ended before any row reached it (a row first rejects the assertion). */
async function endsWithoutRows(stream: SseClient): Promise<void> {
  const firstRow = stream.rows(1).then(
    () => 'a row',
    () => 'ended',
  );
  assert.equal(await Promise.race([stream.ended.then(() => 'ended'), firstRow]), 'ended');
  assert.equal(stream.events.filter((e) => e.data !== null && e.event === null).length, 0, 'no row was sent');
  const last = stream.events.at(-1);
  assert.equal(last?.event, 'error');
  assert.deepEqual(JSON.parse(last.data!), ENVELOPE);
}

async function answered401(res: Response): Promise<void> {
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), ENVELOPE);
}

describe('a revoked key on open requests', () => {
  it('writes committed after the revocation reach neither its change stream nor its long-poll (checked before delivery)', async () => {
    // The idle re-check is set far out: only the check before a delivery can stop these rows.
    const h = await createHarness({ keyRecheckMs: 3_600_000 });
    try {
      const leaving = await issueKey(h.stores, 'leaving');
      const staying = await h.key('staying');
      await h.stores.catchUp();
      const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
      const revoked = await openStream(`${base}/v1/projects/changes?since=now`, leaving.key);
      const other = await openStream(`${base}/v1/projects/changes?since=now`, staying);
      const cursor = (await h.get('/v1/projects?since=now', leaving.key)).json().cursor as string;
      const poll = fetch(`${base}/v1/projects?cursor=${cursor}&wait=30`, {
        headers: { authorization: `Bearer ${leaving.key}` },
      });
      try {
        assert.equal(revoked.status, 200);
        assert.ok(await eventually(() => h.services.commits.waiting() === 3), 'both streams and the long-poll wait');
        await revokeKey(h.stores, leaving.keyId);
        await appendSightings(h.stores.log, { first: 0, count: 20, prefix: 'rv' });
        await h.stores.catchUp();

        await answered401(await poll);
        await endsWithoutRows(revoked);
        // The writes were delivered: to the key that is still valid.
        assert.equal((await other.rows(20)).length, 20);
        assert.ok(await eventually(() => h.services.heldKeys.held() === 1), 'the revoked requests let their keys go');
      } finally {
        revoked.abort();
        other.abort();
      }
    } finally {
      await h.close();
    }
  });

  it('an idle stream and long-poll are ended by the periodic re-check, with no write to wake them', async () => {
    const h = await createHarness({ keyRecheckMs: 100 });
    try {
      const leaving = await issueKey(h.stores, 'leaving');
      await h.stores.catchUp();
      const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
      const stream = await openStream(`${base}/v1/projects/changes?since=now`, leaving.key);
      const cursor = (await h.get('/v1/projects?since=now', leaving.key)).json().cursor as string;
      const poll = fetch(`${base}/v1/projects?cursor=${cursor}&wait=30`, {
        headers: { authorization: `Bearer ${leaving.key}` },
      });
      try {
        assert.ok(await eventually(() => h.services.commits.waiting() === 2));
        await revokeKey(h.stores, leaving.keyId);
        await answered401(await poll);
        await endsWithoutRows(stream);
        // Written after both ended: nothing is left open to carry it.
        await appendSightings(h.stores.log, { first: 0, count: 20, prefix: 'rv' });
        await h.stores.catchUp();
        assert.equal(h.services.changes.openCount(), 0);
        assert.equal(stream.events.filter((e) => e.data !== null && e.event === null).length, 0);
      } finally {
        stream.abort();
      }
    } finally {
      await h.close();
    }
  });

  it('an MCP listen is closed before a write is announced to it, not after', async () => {
    const h = await createHarness();
    // Its own instance with the idle re-check far out: only the check before a delivery can close it in time.
    const app = Fastify();
    await app.register(mcpPlugin, { services: h.services, listen: { keepAliveMs: 60_000, recheckMs: 3_600_000 } });
    const gone = new AbortController();
    try {
      const leaving = await issueKey(h.stores, 'leaving');
      const staying = await h.key('staying');
      await h.stores.catchUp();
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      const revoked = await postListen(base, leaving.key, gone.signal);
      const other = await postListen(base, staying, gone.signal);
      const revokedText = readAll(revoked);
      const otherText = readAll(other);
      assert.ok(await eventually(() => h.services.commits.waiting() === 1), 'the listen pump waits');
      // A collection first: the web Request the SDK reads the listen's abort from must outlive it.
      collectGarbage();
      await revokeKey(h.stores, leaving.keyId);
      await appendSightings(h.stores.log, { first: 0, count: 20, prefix: 'rv' });
      await h.stores.catchUp();
      // The other listen is told (so the write was announced), then closed with the server.
      assert.ok(await eventually(() => otherText.text().includes('notifications/resources/list_changed')));
      const text = await revokedText.done;
      assert.match(text, /notifications\/subscriptions\/acknowledged/);
      assert.doesNotMatch(text, /list_changed/);
    } finally {
      gone.abort();
      await app.close();
      await h.close();
    }
  });
});

/** Reads a response body to its end: the text so far at any time, and all of it once it ends. */
function readAll(res: Response): { text(): string; done: Promise<string> } {
  let text = '';
  const decoder = new TextDecoder();
  const done = (async () => {
    try {
      for await (const chunk of res.body!) text += decoder.decode(chunk, { stream: true });
    } catch {
      // Aborted by the test when it is done with the stream.
    }
    return text;
  })();
  return { text: () => text, done };
}
