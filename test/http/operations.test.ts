import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { seedBoard } from '../mcp/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const CORS_ORIGIN = 'https://app.example.com';

describe('HTTP as an operator expects it', () => {
  let h: Harness;
  let key: string;
  const logLines: string[] = [];
  const auth = () => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    h = await createHarness({
      env: { PULSEBOARD_CORS_ORIGINS: CORS_ORIGIN },
      logStream: { write: (line) => void logLines.push(line) },
    });
    await seedBoard(h);
    key = await h.key('member', ['allow', 'link']);
  });
  afterAll(() => h.close());

  it('a read carries an ETag; If-None-Match answers 304 with no body, and the 304 still spends the budget', async () => {
    const first = await h.app.inject({ method: 'GET', url: '/v1/projects', headers: auth() });
    assert.equal(first.statusCode, 200);
    const etag = first.headers.etag as string;
    assert.match(etag, /^W\/"[A-Za-z0-9_-]+"$/);
    assert.equal(first.headers['cache-control'], 'private, max-age=0, must-revalidate');
    const remaining = Number(first.headers['ratelimit-remaining']);

    const again = await h.app.inject({
      method: 'GET',
      url: '/v1/projects',
      headers: { ...auth(), 'if-none-match': `"other", ${etag}` },
    });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assert.equal(again.headers.etag, etag);
    assert.equal(Number(again.headers['ratelimit-remaining']), remaining - 1, 'a 304 is counted like any request');

    const stale = await h.app.inject({
      method: 'GET',
      url: '/v1/projects',
      headers: { ...auth(), 'if-none-match': 'W/"nope"' },
    });
    assert.equal(stale.statusCode, 200);
    assert.equal(stale.headers.etag, etag, 'the read time is not part of the validator');
    assert.notEqual(stale.json().readAt, undefined);
  });

  it('call records stay private, no-store (with an ETag); errors are never cacheable', async () => {
    const calls = await h.app.inject({ method: 'GET', url: '/v1/calltracker/calls', headers: auth() });
    assert.equal(calls.statusCode, 200);
    assert.equal(calls.headers['cache-control'], 'private, no-store');
    assert.ok(calls.headers.etag);
    const missing = await h.app.inject({ method: 'GET', url: '/v1/projects/nobody-here', headers: auth() });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.headers['cache-control'], 'private, no-store');
    assert.equal(missing.headers.etag, undefined);
  });

  it('compresses JSON over 1 KB with br or gzip, and leaves small bodies alone', async () => {
    const plain = await h.app.inject({ method: 'GET', url: '/v1/projects', headers: auth() });
    const gz = await h.app.inject({
      method: 'GET',
      url: '/v1/projects',
      headers: { ...auth(), 'accept-encoding': 'gzip' },
    });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.ok(
      gz.rawPayload.length < plain.rawPayload.length / 3,
      `gzip ${gz.rawPayload.length} of ${plain.rawPayload.length}`,
    );
    const withoutReadAt = (text: string) => ({ ...JSON.parse(text), readAt: null });
    assert.deepEqual(withoutReadAt(gunzipSync(gz.rawPayload).toString()), withoutReadAt(plain.body));
    assert.equal(gz.headers.etag, plain.headers.etag, 'one weak validator for every encoding');
    assert.match(String(gz.headers.vary), /accept-encoding/i);

    const br = await h.app.inject({
      method: 'GET',
      url: '/v1/projects',
      headers: { ...auth(), 'accept-encoding': 'br;q=1, gzip;q=0.5' },
    });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.deepEqual(withoutReadAt(brotliDecompressSync(br.rawPayload).toString()), withoutReadAt(plain.body));

    const small = await h.app.inject({
      method: 'GET',
      url: '/v1/projects/nobody-here',
      headers: { ...auth(), 'accept-encoding': 'gzip' },
    });
    assert.equal(small.headers['content-encoding'], undefined);
    assert.equal(small.json().error.code, 'not_found');

    // /mcp too: a 2026-07-28 tools/list answer (JSON, the tool schemas, well over 1 KB) travels compressed when accepted.
    const rpcHeaders = {
      ...auth(),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list',
    };
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'ops', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } };
    const mcpPlain = await h.app.inject({ method: 'POST', url: '/mcp', headers: rpcHeaders, payload: list });
    assert.equal(mcpPlain.headers['content-encoding'], undefined);
    assert.ok(mcpPlain.rawPayload.length > 1024);
    const mcpGz = await h.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...rpcHeaders, 'accept-encoding': 'gzip' },
      payload: list,
    });
    assert.equal(mcpGz.headers['content-encoding'], 'gzip');
    assert.match(String(mcpGz.headers.vary), /accept-encoding/i);
    assert.equal(gunzipSync(mcpGz.rawPayload).toString(), mcpPlain.body);
  });

  it('answers a CORS preflight 204 for a configured origin, allowing Authorization; no allow-origin for others', async () => {
    const preflight = await h.app.inject({
      method: 'OPTIONS',
      url: '/v1/projects',
      headers: {
        origin: CORS_ORIGIN,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    assert.equal(preflight.statusCode, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], CORS_ORIGIN);
    assert.match(String(preflight.headers['access-control-allow-headers']), /Authorization/);
    assert.match(String(preflight.headers['access-control-allow-methods']), /GET/);

    const read = await h.app.inject({
      method: 'GET',
      url: '/v1/projects',
      headers: { ...auth(), origin: CORS_ORIGIN },
    });
    assert.equal(read.headers['access-control-allow-origin'], CORS_ORIGIN);
    assert.match(String(read.headers['access-control-expose-headers']), /ETag/);
    assert.match(String(read.headers['access-control-expose-headers']), /Link/);

    const foreign = await h.app.inject({
      method: 'OPTIONS',
      url: '/v1/projects',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    assert.equal(foreign.headers['access-control-allow-origin'], undefined);
  });

  it('echoes an acceptable X-Request-Id, mints a UUID for a missing or unacceptable one, and logs it on the access line', async () => {
    const given = await h.app.inject({
      method: 'GET',
      url: '/v1/projects',
      headers: { ...auth(), 'x-request-id': 'trace-42.a:b' },
    });
    assert.equal(given.headers['x-request-id'], 'trace-42.a:b');
    const minted = await h.app.inject({ method: 'GET', url: '/v1/projects', headers: auth() });
    assert.match(
      String(minted.headers['x-request-id']),
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    for (const bad of ['x'.repeat(129), 'has space', '<script>']) {
      const res = await h.app.inject({
        method: 'GET',
        url: '/v1/projects',
        headers: { ...auth(), 'x-request-id': bad },
      });
      assert.notEqual(res.headers['x-request-id'], bad);
      assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    }
    const line = logLines
      .map((l) => JSON.parse(l))
      .find((l) => l.reqId === 'trace-42.a:b' && l.msg === 'request completed');
    assert.ok(line, 'an access line with the request id');
    assert.equal(line.operation, 'listProjects');
    assert.equal(line.statusCode, 200);
    assert.match(line.keyId, /^[0-9a-f]{24}$/);
    assert.ok(!logLines.some((l) => l.includes(key)), 'the key itself is never logged');

    const rpc = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'get_project', arguments: { handle: 'h1' } },
    };
    const mcpHeaders = {
      ...auth(),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'x-request-id': 'mcp-call-1',
    };
    assert.equal(
      (await h.app.inject({ method: 'POST', url: '/mcp', headers: mcpHeaders, payload: rpc })).statusCode,
      200,
    );
    const unknownTool = { ...rpc, params: { name: 'made_up_<tool>', arguments: {} } };
    await h.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...mcpHeaders, 'x-request-id': 'mcp-call-2' },
      payload: unknownTool,
    });
    const lines = logLines.map((l) => JSON.parse(l));
    const mcpLine = lines.find((l) => l.reqId === 'mcp-call-1' && l.msg === 'request completed');
    assert.deepEqual(mcpLine.rpc, { method: 'tools/call', tool: 'get_project' });
    assert.equal(mcpLine.operation, 'mcp:get_project');
    assert.match(mcpLine.keyId, /^[0-9a-f]{24}$/);
    const unknownLine = lines.find((l) => l.reqId === 'mcp-call-2' && l.msg === 'request completed');
    assert.deepEqual(
      unknownLine.rpc,
      { method: 'tools/call', tool: 'unknown_tool' },
      'caller text never reaches a log field',
    );
    // Every other body gets a label from the fixed set too.
    const labelled: [string, unknown, string, unknown][] = [
      ['mcp-other', { jsonrpc: '2.0', id: 8, method: 'made/up<method>' }, 'mcp:other', { method: 'other' }],
      ['mcp-proto', { jsonrpc: '2.0', id: 9, method: 'constructor' }, 'mcp:other', { method: 'other' }],
      [
        'mcp-tool-proto',
        { ...rpc, params: { name: 'toString', arguments: {} } },
        'mcp:unknown_tool',
        { method: 'tools/call', tool: 'unknown_tool' },
      ],
      ['mcp-ping', { jsonrpc: '2.0', id: 10, method: 'ping' }, 'mcp:ping', { method: 'ping' }],
      ['mcp-batch', [rpc, { jsonrpc: '2.0', id: 11, method: 'ping' }], 'mcp:batch', { method: 'batch' }],
      ['mcp-none', 'null', 'mcp', undefined],
    ];
    for (const [reqId, payload] of labelled) {
      await h.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...mcpHeaders, 'x-request-id': reqId },
        payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
      });
    }
    const after = logLines.map((l) => JSON.parse(l));
    for (const [reqId, , operation, rpcLabel] of labelled) {
      const line = after.find((l) => l.reqId === reqId && l.msg === 'request completed');
      assert.equal(line?.operation, operation, reqId);
      assert.deepEqual(line?.rpc, rpcLabel, reqId);
    }
  });

  it('sends nosniff everywhere, no X-Powered-By, and frame-ancestors none on the docs page', async () => {
    for (const url of ['/v1/projects', '/healthz', '/docs', '/v1/openapi.json', '/nowhere', '/metrics']) {
      const res = await h.app.inject({ method: 'GET', url, headers: auth() });
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(res.headers['x-powered-by'], undefined, url);
    }
    const docs = await h.app.inject({ method: 'GET', url: '/docs' });
    assert.match(String(docs.headers['content-security-policy']), /frame-ancestors 'none'/);
  });
});
