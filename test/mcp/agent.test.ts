import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createHarness, type Harness } from '../support/harness.ts';
import { card, makeCall, publishCard, recordCall } from '../support/calls-fixtures.ts';
import { connectClient, postRpc, rpcMessage, seedBoard, toolCall } from './support.ts';
import { tools } from '../../mcp/tools.ts';

/** ajv-formats is CommonJS: its default export arrives wrapped under Node's ESM loader. */
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

type ListedTool = { name: string; inputSchema: Record<string, any>; outputSchema: Record<string, any> };

describe('MCP as an agent meets it: handshake budget, listing size, schemas, errors', () => {
  let h: Harness;
  let base: string;
  let alice: string;

  beforeAll(async () => {
    // The real in-process limiter at the spec's 60 per minute.
    h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '60' }, now: () => new Date('2026-11-20T08:00:00.000Z') });
    alice = await h.key('alice', ['allow']);
    await seedBoard(h);
    for (let n = 0; n < 3; n++)
      await recordCall(h, makeCall(n, { createdAt: new Date(Date.UTC(2026, 10, 1, n)).toISOString(), tokens: 2 }));
    await publishCard(h, card('launches', 1), '2026-11-19T08:00:00.000Z');
    await h.stores.catchUp();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  it('connect and tools/list spend nothing: 60 tool calls in a minute succeed, the 61st is a tool error with _meta.retryAfterSeconds', async () => {
    const key = await h.key('agent');
    const client: Client = await connectClient(base, key);
    try {
      assert.equal((await client.listTools()).tools.length, tools.length);
      await client.ping();
      for (let i = 1; i <= 60; i++) {
        const result = await client.callTool({ name: 'get_project', arguments: { handle: 'h1' } });
        assert.equal(result.isError ?? false, false, `call ${i}`);
      }
      const refused = await client.callTool({ name: 'get_project', arguments: { handle: 'h1' } });
      assert.equal(refused.isError, true);
      assert.equal((refused.structuredContent as any).error.code, 'rate_limited');
      const wait = (refused._meta as any)?.retryAfterSeconds;
      assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `retryAfterSeconds ${wait}`);
      assert.match((refused.structuredContent as any).error.message, new RegExp(`Wait ${wait} seconds`));
      // The data budget is spent; the protocol budget is not: listing and a new connection still work.
      assert.equal((await client.listTools()).tools.length, tools.length);
      const again = await connectClient(base, key);
      await again.close();
    } finally {
      await client.close();
    }
  });

  it('protocol messages have a budget of their own, answered with the envelope and Retry-After when spent', async () => {
    const limited = await createHarness({ env: { PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: '3' } });
    try {
      const key = await limited.key('chatty');
      const url = await limited.app.listen({ host: '127.0.0.1', port: 0 });
      for (let i = 0; i < 3; i++)
        assert.equal((await postRpc(url, key, { jsonrpc: '2.0', id: i, method: 'ping' })).status, 200);
      const refused = await postRpc(url, key, { jsonrpc: '2.0', id: 9, method: 'tools/list' });
      assert.equal(refused.status, 429);
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      const body = (await refused.json()) as any;
      assert.equal(body.error.code, 'rate_limited');
      // Tool calls spend the other budget.
      const call = await rpcMessage(await postRpc(url, key, toolCall('list_projects', {})));
      assert.equal(call.result.isError ?? false, false);
    } finally {
      await limited.close();
    }
  });

  it('advertises tools, resources and completions to a 2025 client, without subscriptions (no stream outlives a request)', async () => {
    const res = await postRpc(base, alice, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    const body = await rpcMessage(res);
    assert.deepEqual(body.result.capabilities, {
      tools: { listChanged: false },
      resources: { listChanged: false },
      completions: {},
    });
    assert.equal(body.result.protocolVersion, '2025-06-18');
  });

  it('tools/list is at most 30 KB, with formats instead of regexes and typed paging parameters', async () => {
    const res = await postRpc(base, alice, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const text = JSON.stringify(await rpcMessage(res));
    console.log(`tools/list: ${bytes(text)} bytes`);
    assert.ok(bytes(text) <= 30_000, `tools/list is ${bytes(text)} bytes`);
    const listed = (JSON.parse(text) as any).result.tools as ListedTool[];
    const walk = (node: unknown, visit: (n: Record<string, unknown>) => void): void => {
      if (Array.isArray(node)) return node.forEach((n) => walk(n, visit));
      if (typeof node !== 'object' || node === null) return;
      visit(node as Record<string, unknown>);
      Object.values(node).forEach((n) => walk(n, visit));
    };
    let formats = 0;
    walk(listed, (n) => {
      if (typeof n.format === 'string') {
        formats += 1;
        assert.equal(n.pattern, undefined, `a ${n.format} carries no regex`);
      }
    });
    assert.ok(formats > 20);
    const input = (tool: string, name: string) => listed.find((t) => t.name === tool)!.inputSchema.properties[name];
    const bare = ({ description: _d, ...rest }: Record<string, unknown>) => rest;
    assert.deepEqual(bare(input('list_projects', 'page')), {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      default: 1,
    });
    assert.deepEqual(bare(input('sync_projects', 'limit')), { type: 'integer', minimum: 1, maximum: 100, default: 30 });
    assert.deepEqual(bare(input('list_calltracker_calls', 'limit')), {
      type: 'integer',
      minimum: 1,
      maximum: 30,
      default: 20,
    });
    assert.deepEqual(bare(input('list_calltracker_calls', 'maxBytes')), {
      type: 'integer',
      minimum: 4096,
      maximum: 524288,
      default: 40000,
    });
    assert.deepEqual(bare(input('list_projects', 'hasDossier')), { type: 'boolean' });
    assert.deepEqual(bare(input('get_project', 'include')), { type: 'string', enum: ['context'] });
    assert.equal(input('get_pulse', 'beat').enum.length, 8);
    // Every list tool says what it answers by default and how to get more.
    for (const name of ['list_projects', 'sync_projects']) {
      const tool = listed.find((t) => t.name === name) as unknown as { description: string };
      assert.match(tool.description, /summary view \(view "full": the REST body\)/, name);
    }
    assert.match(
      (listed.find((t) => t.name === 'list_calltracker_calls') as unknown as { description: string }).description,
      /maxBytes/,
    );
  });

  it('every result of every tool validates against its listed output schema (ajv)', async () => {
    const listed = (await rpcMessage(await postRpc(base, alice, { jsonrpc: '2.0', id: 1, method: 'tools/list' })))
      .result.tools as ListedTool[];
    const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
    const validators = new Map(listed.map((t) => [t.name, ajv.compile(t.outputSchema)]));
    const first = (await h.get('/v1/calltracker/calls?limit=1', alice)).json().calls[0].id as string;
    const calls: [string, Record<string, unknown>][] = [
      ['list_projects', {}],
      ['list_projects', { page: 2, hasDossier: true }],
      ['list_projects', { page: 0 }],
      ['list_projects', { view: 'summary' }],
      ['sync_projects', { view: 'summary', limit: 5 }],
      ['sync_projects', {}],
      ['sync_projects', { since: 'now' }],
      ['sync_projects', { since: '2026-01-01T00:00:00Z', limit: 3 }],
      ['sync_projects', { cursor: 'nope' }],
      ['get_project', { handle: 'h1' }],
      ['get_project', { handle: 'p001', include: 'context' }],
      ['get_project', { handle: 'p003', asOf: '2026-10-02T00:00:00Z' }],
      ['get_project', { handle: 'nobody' }],
      ['list_projects', { asOf: new Date().toISOString() }],
      ['search_projects', { q: 'h3', asOf: new Date().toISOString() }],
      ['diff_projects', { from: '2000-01-01T00:00:00Z', limit: 3 }],
      ['diff_projects', { from: 'nope' }],
      ['get_thesis_feed', { contract: `0x${'a'.repeat(40)}` }],
      ['request_thesis_feed', { contract: `0x${'a'.repeat(40)}` }],
      ['ask_researcher', { handle: 'h2', question: 'Is the team public?' }],
      ['researcher_answers', { handle: 'h1' }],
      ['researcher_answers', { handle: 'nobody' }],
      ['search_projects', { q: 'h3' }],
      ['search_projects', { q: 'no-such-thing.example' }],
      ['get_pulse', {}],
      ['get_pulse', { beat: 'launches' }],
      ['get_pulse', { beat: 'nope' }],
      ['list_calltracker_calls', { limit: 2 }],
      ['list_calltracker_calls', { maxBytes: 1 }],
      ['get_calltracker_call', { id: first }],
      ['get_calltracker_call', { id: 'not-a-uuid' }],
    ];
    const seen = new Set<string>();
    for (const [i, [name, args]] of calls.entries()) {
      const body = await rpcMessage(await postRpc(base, alice, toolCall(name, args, i)));
      const validate = validators.get(name)!;
      assert.ok(
        validate(body.result.structuredContent),
        `${name} ${JSON.stringify(args)}: ${ajv.errorsText(validate.errors)}`,
      );
      seen.add(name);
    }
    assert.deepEqual([...seen].sort(), listed.map((t) => t.name).sort(), 'every tool was called');
    // The schemas have teeth: a wrong type or an unknown enum value is refused.
    const project = (await rpcMessage(await postRpc(base, alice, toolCall('get_project', { handle: 'h1' })))).result
      .structuredContent;
    assert.equal(validators.get('get_project')!({ ...project, project: { ...project.project, fol: 'many' } }), false);
    const pulse = (await rpcMessage(await postRpc(base, alice, toolCall('get_pulse', { beat: 'launches' })))).result
      .structuredContent;
    assert.equal(
      validators.get('get_pulse')!({ ...pulse, beat: { ...pulse.beat, card: { ...pulse.beat.card, status: 'loud' } } }),
      false,
    );
  });

  it('an unknown tool and arguments that are not an object are protocol errors; wrong argument types are tool errors in the envelope', async () => {
    const unknown = await rpcMessage(await postRpc(base, alice, toolCall('get_projects', { handle: 'h1' })));
    assert.equal(unknown.error.code, -32602);
    assert.match(unknown.error.message, /not found/);

    const notAnObject = await rpcMessage(
      await postRpc(base, alice, toolCall('get_project', 'str' as unknown as Record<string, unknown>)),
    );
    assert.equal(notAnObject.error.code, -32602);

    const noName = await rpcMessage(
      await postRpc(base, alice, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: {} }),
    );
    assert.equal(noName.error.code, -32602);

    const wrongType = await rpcMessage(await postRpc(base, alice, toolCall('list_projects', { page: 'two' })));
    assert.equal(wrongType.result.isError, true);
    assert.deepEqual(wrongType.result.structuredContent, {
      error: { code: 'bad_request', message: "parameter 'page' must be a whole number from 1 to 1000000" },
    });
    assert.deepEqual(wrongType.result.content, [
      { type: 'text', text: JSON.stringify(wrongType.result.structuredContent) },
    ]);
    const unknownArgument = await rpcMessage(await postRpc(base, alice, toolCall('list_projects', { pages: 2 })));
    assert.deepEqual(unknownArgument.result.structuredContent, {
      error: { code: 'bad_request', message: "unknown parameter 'pages'" },
    });
    // Numeric strings are still accepted, as on REST, though not advertised.
    const numeric = await rpcMessage(await postRpc(base, alice, toolCall('list_projects', { page: '2' })));
    assert.equal(numeric.result.structuredContent.page, 2);
  });
});

/** One POST to /mcp with the Host and Origin given (fetch does not let a caller set Host). */
function postWithHost(
  url: string,
  key: string,
  host: string,
  origin?: string,
): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: '/mcp',
        method: 'POST',
        headers: {
          host,
          ...(origin === undefined ? {} : { origin }),
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  });
}

describe('DNS-rebinding protection of /mcp', () => {
  it('defaults: loopback Host names on any port, no Origin or a loopback Origin; anything else is 403 in the envelope, before the key is looked at', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('local');
      const url = `${await h.app.listen({ host: '127.0.0.1', port: 0 })}/mcp`;
      const port = new URL(url).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `[::1]:${port}`]) {
        assert.equal((await postWithHost(url, key, host)).status, 200, host);
      }
      assert.equal((await postWithHost(url, key, `localhost:${port}`, 'http://localhost:5173')).status, 200);
      for (const [host, origin] of [
        ['evil.example.com', undefined],
        [`evil.example.com:${port}`, 'http://evil.example.com'],
        [`127.0.0.1:${port}`, 'http://evil.example.com'],
        [`127.0.0.1:${port}`, 'null'],
      ] as const) {
        const res = await postWithHost(url, 'pbk_not_even_a_key', host, origin);
        assert.equal(res.status, 403, `${host} ${origin}`);
        const body = JSON.parse(res.body);
        assert.equal(body.error.code, 'forbidden');
        assert.match(body.error.message, /DNS-rebinding protection/);
        assert.ok(!res.body.includes('evil'), 'the refused value is not echoed');
      }
      // REST is not an MCP transport and is unaffected.
      assert.equal(
        (
          await fetch(`${url.replace('/mcp', '')}/v1/projects`, {
            headers: { authorization: `Bearer ${key}`, origin: 'http://evil.example.com' },
          })
        ).status,
        200,
      );
    } finally {
      await h.close();
    }
  });

  it('configured hosts and origins replace the defaults', async () => {
    const h = await createHarness({
      env: {
        PULSEBOARD_MCP_ALLOWED_HOSTS: 'mcp.example.com,api:8080',
        PULSEBOARD_MCP_ALLOWED_ORIGINS: 'https://app.example.com',
      },
    });
    try {
      const key = await h.key('remote');
      const url = `${await h.app.listen({ host: '127.0.0.1', port: 0 })}/mcp`;
      assert.equal((await postWithHost(url, key, 'mcp.example.com')).status, 200);
      assert.equal((await postWithHost(url, key, 'MCP.example.com:443', 'https://app.example.com')).status, 200);
      assert.equal((await postWithHost(url, key, 'api:8080')).status, 200);
      assert.equal((await postWithHost(url, key, 'api:8081')).status, 403);
      assert.equal((await postWithHost(url, key, 'localhost')).status, 403);
      assert.equal((await postWithHost(url, key, 'mcp.example.com', 'http://localhost:5173')).status, 403);
    } finally {
      await h.close();
    }
  });
});
