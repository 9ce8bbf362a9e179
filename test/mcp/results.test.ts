import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { toolInputFrom } from '../../mcp/input.ts';
import { serializedToolSuccess, toolFailure, toolSuccess } from '../../mcp/results.ts';
import { createMcpEndpoint } from '../../mcp/server.ts';
import { errors } from '../../service/errors.ts';

describe('tool results', () => {
  it('a success serialized once is byte for byte the result serialized whole', () => {
    const bodies = [{}, { a: 1 }, { text: 'quote " backslash \\ newline \n control \u0001 emoji 🚀 价格', nested: { list: [null, true, 1.5] } }];
    for (const body of bodies) assert.equal(serializedToolSuccess(body), JSON.stringify(toolSuccess(body)));
  });

  it('a failure with a wait says it in the message and in _meta.retryAfterSeconds; one without has no _meta', () => {
    const limited = toolFailure(errors.rateLimited(41.2));
    assert.deepEqual(limited._meta, { retryAfterSeconds: 42 });
    assert.equal((limited.structuredContent as any).error.message, 'Rate limit exceeded; retry after the Retry-After interval. Wait 42 seconds before calling again.');
    const down = toolFailure(errors.rateProtectionDown());
    assert.deepEqual(down._meta, { retryAfterSeconds: 60 });
    assert.equal((down.structuredContent as any).error.message, 'Rate protection is unavailable; wait 60 seconds and retry.');
    assert.equal('_meta' in toolFailure(errors.notFound('no such thing')), false);
  });
});

describe('the endpoint on odd input', () => {
  it('answers an initialize without its parameters with -32602 saying what to send, and an unknown version with the newest one', async () => {
    const endpoint = createMcpEndpoint({} as never, []);
    const context = { caller: { keyId: 'k', owner: 'o' } };
    const bare = JSON.parse(String(await endpoint.answer({ jsonrpc: '2.0', id: 1, method: 'initialize' }, context)));
    assert.equal(bare.error.code, -32602);
    assert.match(bare.error.message, /params\.protocolVersion/);
    const params = { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'x', version: '1' } };
    const old = JSON.parse(String(await endpoint.answer({ jsonrpc: '2.0', id: 2, method: 'initialize', params }, context)));
    assert.equal(old.result.protocolVersion, LATEST_PROTOCOL_VERSION);
    assert.deepEqual(old.result.capabilities, { tools: {} });
  });

  it('answers a tool that throws as an unavailable tool error with a wait, reporting only the error name', async () => {
    const thrower = {
      name: 'boom',
      title: 'Boom',
      description: 'Throws.',
      input: toolInputFrom({ query: z.object({}).strict() }),
      outputSchema: z.object({}),
      readOnly: true,
      protection: () => 'basic' as const,
      call: async () => {
        throw new TypeError('secret input echoed here');
      },
    };
    const reported: string[] = [];
    const endpoint = createMcpEndpoint({} as never, [thrower]);
    const answer = JSON.parse(
      String(
        await endpoint.answer({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'boom', arguments: {} } }, { caller: { keyId: 'k', owner: 'o' }, log: { error: (fields, message) => reported.push(`${fields.err.type}: ${message}`) } }),
      ),
    );
    assert.deepEqual(answer.result.structuredContent, { error: { code: 'unavailable', message: 'Unexpected failure; retry later. Wait 5 seconds before calling again.' } });
    assert.deepEqual(answer.result._meta, { retryAfterSeconds: 5 });
    assert.deepEqual(reported, ['TypeError: mcp tool call failed']);
    assert.ok(!JSON.stringify(answer).includes('secret'));
  });
});
