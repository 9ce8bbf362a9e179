import assert from 'node:assert/strict';
import { McpServer } from '@modelcontextprotocol/server';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import { z } from 'zod';
import { mcpPlugin } from '../../mcp/plugin.ts';
import { toolInputFrom, type Tool } from '../../mcp/tools.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { rpcMessage } from './support.ts';

/** What an instance held of its client when the SDK connected it to a request. */
type Seen = { instance: McpServer; clientInfo: unknown; capabilities: unknown; version: string | undefined };

describe('server instances reused across requests', () => {
  let h: Harness;
  let app: FastifyInstance;
  let base: string;
  const keys: string[] = [];
  const seen: Seen[] = [];
  const connect = McpServer.prototype.connect;
  const holding = { waiting: 0, release: () => {}, released: Promise.resolve() };

  beforeAll(async () => {
    h = await createHarness();
    keys.push(await h.key('pool-a'), await h.key('pool-b'));
    const whoami: Tool = {
      name: 'whoami',
      title: 'Who am I',
      description: 'The key of the caller.',
      input: toolInputFrom({ query: z.object({}).strict() }),
      outputSchema: z.object({ key: z.string() }),
      protection: 'basic',
      call: async (_services, caller) => ({ ok: true, value: { key: caller.keyId } }),
    };
    // Each call waits until `holding.release` is called: so many calls are in flight at once.
    const hold: Tool = {
      ...whoami,
      name: 'hold',
      call: async (services, caller, args) => {
        holding.waiting += 1;
        await holding.released;
        return whoami.call(services, caller, args);
      },
    };
    vi.spyOn(McpServer.prototype, 'connect').mockImplementation(function (this: McpServer, transport) {
      const sdk = this.server;
      seen.push({
        instance: this,
        clientInfo: sdk.getClientVersion(),
        capabilities: sdk.getClientCapabilities(),
        version: sdk.getNegotiatedProtocolVersion(),
      });
      return connect.call(this, transport);
    });
    app = Fastify();
    await app.register(mcpPlugin, { services: h.services, tools: [whoami, hold] });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await app.close();
    await h.close();
  });

  const keyIdOf = async (key: string) => (await h.services.access.authenticate(`Bearer ${key}`))!.keyId;

  /** One POST; `meta` makes it a 2026-07-28 request carrying that envelope. */
  async function post(
    key: string,
    method: string,
    params: Record<string, unknown>,
    meta?: Record<string, unknown>,
    id: number | null = 1,
  ) {
    const envelope = meta && { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', ...meta };
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${key}`,
        ...(meta && { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method }),
        ...(meta && method === 'tools/call' && { 'mcp-name': String(params.name) }),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        ...(id === null ? {} : { id }),
        method,
        params: { ...params, ...(envelope && { _meta: envelope }) },
      }),
    });
    return id === null ? res.status : rpcMessage(res);
  }

  it('carry no API key, client identity, capabilities or protocol version from one request to the next', async () => {
    const [a, b] = keys as [string, string];
    const [idA, idB] = [await keyIdOf(a), await keyIdOf(b)];
    const call = { name: 'whoami', arguments: {} };
    const init = {
      protocolVersion: '2025-06-18',
      capabilities: { roots: { listChanged: true } },
      clientInfo: { name: 'legacy-a', version: '1' },
    };
    const modern = (name: string, capabilities: Record<string, unknown>) => ({
      'io.modelcontextprotocol/clientInfo': { name, version: '1' },
      'io.modelcontextprotocol/clientCapabilities': capabilities,
    });
    // What each request must see on the instance that serves it: its own envelope, or nothing at all (2025).
    const none = { clientInfo: undefined, capabilities: undefined, version: undefined };
    const expected: Omit<Seen, 'instance'>[] = [];
    for (let round = 0; round < 3; round++) {
      expected.push(none);
      assert.equal((await post(a, 'initialize', init)).result.protocolVersion, '2025-06-18');
      expected.push(none);
      assert.deepEqual((await post(b, 'tools/call', call)).result.structuredContent, { key: idB });
      expected.push({
        clientInfo: { name: 'modern-a', version: '1' },
        capabilities: { sampling: {} },
        version: '2026-07-28',
      });
      const first = await post(a, 'tools/call', call, modern('modern-a', { sampling: {} }));
      assert.deepEqual(first.result.structuredContent, { key: idA });
      // A 2026-07-28 notification names no client: it is served by an instance of its own.
      expected.push({ clientInfo: undefined, capabilities: undefined, version: '2026-07-28' });
      assert.equal(await post(a, 'notifications/cancelled', { requestId: 7 }, {}, null), 202);
      expected.push({ clientInfo: { name: 'modern-b', version: '1' }, capabilities: {}, version: '2026-07-28' });
      const answer = await post(b, 'tools/call', call, modern('modern-b', {}));
      assert.deepEqual(answer.result.structuredContent, { key: idB });
      expected.push(none);
      assert.deepEqual((await post(a, 'tools/call', call)).result.structuredContent, { key: idA });
    }
    assert.deepEqual(
      seen.map(({ instance: _, ...rest }) => rest),
      expected,
    );
    // Reused (else nothing above could carry over): each initialize and notification got an instance of its
    // own, the six 2025 and the six 2026-07-28 calls one per era.
    assert.equal(new Set(seen.map((s) => s.instance)).size, 8);
  });

  it('answer each of many interleaved calls of two keys on both eras with its own key', async () => {
    const ids = await Promise.all(keys.map(keyIdOf));
    const envelope = {
      'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, n) => {
        const answer = await post(
          keys[n % 2]!,
          'tools/call',
          { name: 'whoami', arguments: {} },
          n % 4 < 2 ? envelope : undefined,
        );
        return answer.result.structuredContent.key;
      }),
    );
    assert.deepEqual(
      answers,
      answers.map((_, n) => ids[n % 2]),
    );
  });

  it('keep at most 64 idle instances an era: a burst beyond it is left to the collector', async () => {
    const burst = async () => {
      const from = seen.length;
      holding.waiting = 0;
      holding.released = new Promise<void>((resolve) => (holding.release = resolve));
      const calls = Array.from({ length: 100 }, () => post(keys[0]!, 'tools/call', { name: 'hold', arguments: {} }));
      while (holding.waiting < 100) await new Promise((resolve) => setTimeout(resolve, 5));
      holding.release();
      await Promise.all(calls);
      return new Set(seen.slice(from).map((s) => s.instance));
    };
    const first = await burst();
    const second = await burst();
    const kept = [...second].filter((instance) => first.has(instance)).length;
    assert.equal(first.size, 100, 'a hundred calls at once, a hundred instances');
    assert.ok(kept <= 64, `${kept} instances of the first burst served the second`);
  });
});
