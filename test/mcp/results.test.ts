import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { z } from 'zod';
import { toolInputFrom, type Tool } from '../../mcp/tools.ts';
import { toolFailure, toolSuccess } from '../../mcp/server.ts';
import { mcpPlugin } from '../../mcp/plugin.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { postRpc, rpcMessage, toolCall } from './support.ts';
import { errors } from '../../service/errors.ts';

describe('tool results', () => {
  it('a success carries the body as structured content and, byte for byte, as text', () => {
    const body = {
      text: 'quote " backslash \\ newline \n control \u0001 emoji 🚀 价格',
      nested: { list: [null, true, 1.5] },
    };
    const result = toolSuccess(body);
    assert.equal(result.structuredContent, body);
    assert.deepEqual(result.content, [{ type: 'text', text: JSON.stringify(body) }]);
  });

  it('a failure with a wait says it in the message and in _meta.retryAfterSeconds; one without has no _meta', () => {
    const limited = toolFailure(errors.rateLimited(41.2));
    assert.deepEqual(limited._meta, { retryAfterSeconds: 42 });
    assert.equal(
      (limited.structuredContent as any).error.message,
      'Rate limit exceeded; retry after the Retry-After interval. Wait 42 seconds before calling again.',
    );
    const down = toolFailure(errors.rateProtectionDown());
    assert.deepEqual(down._meta, { retryAfterSeconds: 60 });
    assert.equal(
      (down.structuredContent as any).error.message,
      'Rate protection is unavailable; wait 60 seconds and retry.',
    );
    assert.equal('_meta' in toolFailure(errors.notFound('no such thing')), false);
  });
});

describe('the endpoint on odd input', () => {
  let h: Harness;
  let app: FastifyInstance;
  let base: string;
  let key: string;
  const reported: string[] = [];

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('odd');
    const thrower: Tool = {
      name: 'boom',
      title: 'Boom',
      description: 'Throws.',
      input: toolInputFrom({ query: z.object({}).strict() }),
      outputSchema: z.object({}),
      protection: 'basic',
      call: async () => {
        throw new TypeError('secret input echoed here');
      },
    };
    app = Fastify({ logger: { level: 'error', stream: { write: (line: string) => void reported.push(line) } } });
    await app.register(mcpPlugin, { services: h.services, tools: [thrower] });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app.close();
    await h.close();
  });

  it('answers an initialize without its parameters with a JSON-RPC error, and an unknown version with the newest one', async () => {
    const bare = await rpcMessage(await postRpc(base, key, { jsonrpc: '2.0', id: 1, method: 'initialize' }));
    assert.equal(bare.result, undefined);
    assert.ok(Number.isInteger(bare.error.code) && bare.error.code < 0, JSON.stringify(bare));
    const params = { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'x', version: '1' } };
    const old = await rpcMessage(await postRpc(base, key, { jsonrpc: '2.0', id: 2, method: 'initialize', params }));
    assert.equal(old.result.protocolVersion, '2025-11-25');
  });

  it('answers a tool that throws as an unavailable tool error with a wait, reporting only the error name', async () => {
    const answer = await rpcMessage(await postRpc(base, key, toolCall('boom', {})));
    assert.deepEqual(answer.result.structuredContent, {
      error: { code: 'unavailable', message: 'Unexpected failure; retry later. Wait 5 seconds before calling again.' },
    });
    assert.deepEqual(answer.result._meta, { retryAfterSeconds: 5 });
    assert.equal(reported.length, 1);
    assert.equal(JSON.parse(reported[0]!).err.type, 'TypeError');
    assert.ok(!reported[0]!.includes('secret'));
    assert.ok(!JSON.stringify(answer).includes('secret'));
  });
});
