/** The /mcp fast path accepts only what the SDK's message schema accepts as a request, unchanged. */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import { JSONRPCMessageSchema, JSONRPCRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { isPlainRequest } from '../../mcp/plugin.ts';

it('every message the fast path takes is a request the schema accepts with the same content', () => {
  const samples: unknown[] = [
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_project', arguments: { handle: 'x' } } },
    { jsonrpc: '2.0', id: 'a', method: 'tools/list' },
    { jsonrpc: '2.0', id: 1.5, method: 'ping' },
    { jsonrpc: '2.0', id: null, method: 'ping' },
    { jsonrpc: '1.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', id: 1, method: 7 },
    { jsonrpc: '2.0', id: 1, method: 'ping', params: [] },
    { jsonrpc: '2.0', id: 1, method: 'ping', params: null },
    { jsonrpc: '2.0', id: 1, method: 'ping', extra: true },
    { jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: { progressToken: 1 } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 1, result: {} },
    [],
    null,
    'text',
  ];
  let taken = 0;
  for (const sample of samples) {
    if (!isPlainRequest(sample)) continue;
    taken += 1;
    const parsed = JSONRPCMessageSchema.safeParse(sample);
    assert.ok(parsed.success && JSONRPCRequestSchema.safeParse(sample).success, JSON.stringify(sample));
    assert.deepEqual(parsed.data, sample);
  }
  assert.equal(taken, 2);
});

it('a message with a member inherited from its prototype is left to the schema', () => {
  const message = Object.assign(Object.create({ extra: true }) as Record<string, unknown>, { jsonrpc: '2.0', id: 1, method: 'ping' });
  assert.equal(isPlainRequest(message), false);
  assert.equal(isPlainRequest({ jsonrpc: '2.0', id: 1, method: 'ping' }), true);
});
