import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.ts';
import { parseConfig, type Config } from '../../config/config.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { changeOwner, issueKey, revokeKey } from '../../service/access.ts';
import { createInProcessLimiter } from '../../service/rate/in-process.ts';
import { createServices } from '../../service/services.ts';
import { assembleStores, openStores, type Stores } from '../../service/stores.ts';
import { connectClient } from '../mcp/support.ts';

/** Counts every read of the event log the serving instance makes; `down` makes each one fail. */
function countingLog(inner: EventLog) {
  const reads: string[] = [];
  const state = { down: false };
  const read = <T>(what: string, work: () => Promise<T>): Promise<T> => {
    reads.push(what);
    return state.down
      ? Promise.reject(Object.assign(new Error('injected: event log unavailable'), { code: 'UNAVAILABLE' }))
      : work();
  };
  const log: EventLog = {
    ...inner,
    archiveId: () => read('archiveId', () => inner.archiveId()),
    readStream: (stream, options) => read(`readStream ${stream}`, () => inner.readStream(stream, options)),
    streamRevision: (stream) => read(`streamRevision ${stream}`, () => inner.streamRevision(stream)),
    readAll: (options) => read('readAll', () => inner.readAll(options)),
    headPosition: () => read('headPosition', () => inner.headPosition()),
    append: (stream, events, expected) => inner.append(stream, events, expected),
    waitForAppend: (afterPosition, timeoutMs, signal) => inner.waitForAppend(afterPosition, timeoutMs, signal),
    close: () => inner.close(),
  };
  return { log, reads, state };
}

/**
 * One serving instance (its own stores, no projector running, event-log reads counted) and, on the
 * same data directory, the stores a `pulseboard keys` / `owners` command opens in its own process.
 */
describe('access served from the keys and owners read models', () => {
  let dir: string;
  let config: Config;
  let serving: Stores;
  let command: Stores;
  let counted: ReturnType<typeof countingLog>;
  let app: FastifyInstance;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pb-access-'));
    const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '1000000' });
    if (!parsed.ok) throw new Error(parsed.reason);
    config = parsed.config;
    const opened = await openStores(config);
    counted = countingLog(opened.log);
    serving = { ...assembleStores(counted.log, opened.store), close: () => opened.close() };
    command = await openStores(config);
    await command.log.append('project-p1', [
      {
        id: 'a6a0a3a4-4b49-5c1c-9a43-3c8e7e8f0001',
        type: 'project.sighted',
        data: { projectId: 'p1', handle: 'one', at: '2026-11-01T00:00:00Z' },
      },
    ]);
    await serving.catchUp();
    app = buildApp(createServices({ config, stores: serving, limiter: createInProcessLimiter({ limit: 1_000_000 }) }));
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await app.close();
    await command.close();
    await serving.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const rest = (key: string, url = '/v1/projects/one') =>
    app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });

  it('authenticates without reading the event log, and refuses a revoked key on the very next REST and MCP request', async () => {
    const issued = await issueKey(command, 'dora');
    // Nothing projected the key in the serving process: the command settled the read model itself.
    counted.reads.length = 0;
    assert.equal((await rest(issued.key)).statusCode, 200);
    const client = await connectClient(base, issued.key);
    try {
      const first = await client.callTool({ name: 'get_project', arguments: { handle: 'one' } });
      assert.equal(first.isError ?? false, false);
      assert.deepEqual(counted.reads, [], 'no event-log read on the authenticated read path');

      const revoked = await revokeKey(command, issued.keyId);
      assert.deepEqual(revoked, { ok: true });
      assert.equal((await rest(issued.key)).statusCode, 401);
      await assert.rejects(
        client.callTool({ name: 'get_project', arguments: { handle: 'one' } }),
        (error: unknown) => error instanceof StreamableHTTPError && error.code === 401,
      );
      assert.deepEqual(counted.reads, [], 'the refusal came from the read model too');
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('on one keep-alive connection: a revoked key is refused on the next request, and each request is authenticated by the key it sends', async () => {
    const [alice, bob] = [await issueKey(command, 'alice'), await issueKey(command, 'bob')];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(base);
    const get = (authorization: string) =>
      new Promise<{ status: number; reused: boolean; port: number }>((resolve, reject) => {
        const req = http.get(
          { agent, host: url.hostname, port: url.port, path: '/v1/projects/one', headers: { authorization } },
          (res) => {
            res.resume();
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, port: req.socket?.localPort ?? -1 }),
            );
          },
        );
        req.on('error', reject);
      });
    try {
      const first = await get(`Bearer ${alice.key}`);
      assert.equal(first.status, 200);
      const answers = [
        await get(`Bearer ${alice.key}`),
        await get(`Bearer ${bob.key}`),
        await get(`Bearer ${alice.key}x`),
        await get('Bearer'),
        await get(`Bearer ${alice.key}`),
      ];
      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 200, 401, 401, 200],
      );
      assert.ok(
        answers.every((a) => a.reused && a.port === first.port),
        "every request on the first one's connection",
      );
      assert.deepEqual(await revokeKey(command, alice.keyId), { ok: true });
      const after = [
        await get(`Bearer ${alice.key}`),
        await get(`Bearer ${bob.key}`),
        await get(`Bearer ${alice.key}`),
      ];
      assert.deepEqual(
        after.map((a) => a.status),
        [401, 200, 401],
      );
      assert.ok(after.every((a) => a.reused && a.port === first.port));
    } finally {
      agent.destroy();
    }
  });

  it('applies owner deny and allow on the very next request, from the owners read model', async () => {
    const { key } = await issueKey(command, 'erin');
    const ask = () => rest(key, '/v1/projects/one/ask');
    assert.equal((await ask()).statusCode, 403, 'not allowlisted yet');
    await changeOwner(command, 'erin', 'allow');
    assert.equal((await ask()).statusCode, 200);
    await changeOwner(command, 'erin', 'deny');
    assert.equal((await ask()).statusCode, 403);
    assert.deepEqual(
      counted.reads.filter((read) => read.includes('key-') || read.includes('owner-')),
      [],
      'no key or owner stream is read per request',
    );
  });

  it('settles alongside a running projector without applying anything twice or moving back', async () => {
    const stop = new AbortController();
    const running = serving.runners.map((runner) => runner.run(stop.signal));
    try {
      const keys = await Promise.all(Array.from({ length: 20 }, (_, i) => issueKey(command, `owner-${i}`)));
      await Promise.all(keys.slice(0, 10).map((k) => revokeKey(command, k.keyId)));
      for (const [i, k] of keys.entries()) assert.equal((await rest(k.key)).statusCode, i < 10 ? 401 : 200);
    } finally {
      stop.abort();
      await Promise.all(running);
    }
    const head = await serving.log.headPosition();
    await serving.catchUp();
    assert.equal(await serving.store.checkpoint('keys'), head);
    const rows = (await serving.store.list<{ revokedAt: string | null }>('keys', { offset: 0, limit: 1000 })).docs;
    // The keys of every test so far: 1 + 2 + 1 before this one (two of them revoked), 20 here.
    assert.equal(rows.length, 24);
    assert.equal(rows.filter((r) => r.doc.revokedAt !== null).length, 12);
  });

  it('keeps authenticating and serving reads while the event log is down; /readyz says degraded, not unready', async () => {
    const { key } = await issueKey(command, 'fay');
    counted.state.down = true;
    try {
      assert.equal((await rest(key)).statusCode, 200);
      assert.equal((await rest(key, '/v1/projects')).statusCode, 200);
      assert.equal((await rest('pbk_' + 'x'.repeat(43))).statusCode, 401);
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 200);
      assert.equal(ready.json().status, 'degraded');
      assert.equal(ready.json().checks.eventLog, 'unreachable');
    } finally {
      counted.state.down = false;
    }
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).json().status, 'ready');
  });
});
