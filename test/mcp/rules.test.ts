import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { makeCall, recordCall } from '../support/calls-fixtures.ts';
import { rpcMessages, seedBoard, toolCall } from './support.ts';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** A 2026-07-28 request: the envelope in `_meta` and the routing headers the SDK cross-checks. */
function modern(method: string, params: Record<string, unknown>, id: number = 1) {
  const name = (params.name ?? params.uri) as string | undefined;
  return {
    headers: {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
    },
    body: { jsonrpc: '2.0', id, method, params: { ...params, _meta: META } },
  };
}

/** The JSON-RPC messages of a body already read: JSON, or the `data:` lines of an event stream. */
function messagesIn(text: string): any[] {
  if (/^\s*[[{]/.test(text)) {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as unknown);
}

/** The data results a /mcp answer carries: tool results that are not errors, and resource contents. */
async function dataResults(res: Response): Promise<number> {
  if (res.status !== 200) return 0;
  const messages = await rpcMessages(res);
  return messages.filter((m) => m.result && !m.result.isError && (m.result.structuredContent || m.result.contents))
    .length;
}

describe('/mcp: one budget unit per data-reading message, however it is framed', () => {
  let h: Harness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '3' } });
    key = await h.key('framer');
    await seedBoard(h);
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...JSON_HEADERS, ...headers },
      body: JSON.stringify(body),
    });

  it('at PULSEBOARD_RATE_LIMIT=3, batches are refused and no framing yields more than 3 data results', async () => {
    let results = 0;
    const pulse = (id: number) => toolCall('get_pulse', {}, id);
    for (const size of [100, 2, 1]) {
      const batch = await post(Array.from({ length: size }, (_, i) => pulse(i + 1)));
      assert.equal(batch.status, 400, `a batch of ${size}`);
      const refusal = (await batch.json()) as { id: null; error: { code: number; message: string } };
      assert.equal(refusal.error.code, -32600, `a batch of ${size}`);
      assert.match(refusal.error.message, /one JSON-RPC message per POST/);
    }
    const modernBatch = modern('tools/call', { name: 'get_pulse', arguments: {} });
    results += await dataResults(await post([modernBatch.body, modernBatch.body], modernBatch.headers));
    results += await dataResults(await post([toolCall('get_pulse', {}, 1), { jsonrpc: '2.0', method: 'ping', id: 2 }]));
    for (let i = 0; i < 3; i++) results += await dataResults(await post(pulse(1)));
    const again = modern('tools/call', { name: 'get_pulse', arguments: {} });
    results += await dataResults(await post(again.body, again.headers));
    const read = modern('resources/read', { uri: 'pulseboard://projects/p001' });
    results += await dataResults(await post(read.body, read.headers));
    results += await dataResults(
      await post({ jsonrpc: '2.0', id: 9, method: 'resources/read', params: { uri: 'pulseboard://pulse/launches' } }),
    );
    assert.equal(results, 3);
  });

  it('negotiates only the protocol versions the API guide lists', async () => {
    const listed = ['2026-07-28', '2025-11-25', '2025-06-18'];
    for (const asked of ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']) {
      const res = await post({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      });
      const [message] = await rpcMessages(res);
      assert.ok(listed.includes(message.result.protocolVersion), `${asked} -> ${message.result.protocolVersion}`);
    }
  });
});

describe('/mcp: a rate-limited resource read answers like a rate-limited tool call', () => {
  let h: Harness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '1' } });
    key = await h.key('reader');
    await seedBoard(h);
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  it('a JSON-RPC server error whose data carries the envelope and retryAfterSeconds, not -32603', async () => {
    const post = (body: unknown) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, ...JSON_HEADERS },
        body: JSON.stringify(body),
      });
    const read = { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'pulseboard://projects/p001' } };
    assert.equal(await dataResults(await post(read)), 1);
    const limitedRead = await post(read);
    assert.equal(limitedRead.status, 200);
    const [readAnswer] = await rpcMessages(limitedRead);
    const limitedCall = await post(toolCall('get_project', { handle: 'p001' }));
    const [callAnswer] = await rpcMessages(limitedCall);
    const tool = callAnswer.result;
    assert.equal(tool.isError, true);
    assert.equal(readAnswer.error.code, -32000);
    assert.deepEqual(readAnswer.error.data, {
      error: tool.structuredContent.error,
      retryAfterSeconds: tool._meta.retryAfterSeconds,
    });
    assert.equal(readAnswer.error.message, tool.structuredContent.error.message);
    assert.equal(limitedRead.headers.get('retry-after'), limitedCall.headers.get('retry-after'));
  });
});

describe('/mcp: one error rule, every status', () => {
  let h: Harness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: '40' } });
    key = await h.key('statuses');
    await seedBoard(h);
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const send = (init: { method?: string; headers?: Record<string, string>; body?: string }, path = '/mcp') =>
    fetch(`${base}${path}`, {
      method: init.method ?? 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body === undefined ? { accept: JSON_HEADERS.accept } : JSON_HEADERS),
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: init.body }),
    });

  /** Asserts the REST envelope with this status and code, and returns the response. */
  async function envelope(res: Response, status: number, code: string, label: string) {
    assert.equal(res.status, status, label);
    const body = (await res.json()) as Record<string, any>;
    assert.deepEqual(Object.keys(body), ['error'], `${label}: ${JSON.stringify(body)}`);
    assert.equal(body.error.code, code, label);
    assert.equal(typeof body.error.message, 'string', label);
    return res;
  }

  it('refusals before the JSON-RPC message is read carry the REST envelope', async () => {
    await envelope(await send({ headers: { authorization: '' }, body: ping }), 401, 'unauthorized', '401');
    await envelope(await send({ headers: { origin: 'https://evil.example' }, body: ping }), 403, 'forbidden', '403');
    const get = await envelope(await send({ method: 'GET' }), 405, 'bad_request', '405 GET');
    assert.equal(get.headers.get('allow'), 'POST');
    await envelope(await send({ method: 'DELETE' }), 405, 'bad_request', '405 DELETE');
    await envelope(await send({ body: `{"pad":"${' '.repeat(1024 * 1024 + 16)}"}` }), 413, 'bad_request', '413');
    await envelope(await send({ body: '{"jsonrpc":' }), 400, 'bad_request', '400 not JSON');
    await envelope(await send({ body: '{"__proto__":{"x":1}}' }), 400, 'bad_request', '400 poisoned');
    await envelope(await send({ headers: { accept: 'application/json' }, body: ping }), 406, 'bad_request', '406');
    await envelope(await send({ headers: { 'content-type': 'text/plain' }, body: ping }), 415, 'bad_request', '415');
  });

  it('OPTIONS /mcp is answered as OPTIONS /v1/projects is', async () => {
    const mcp = await send({ method: 'OPTIONS' });
    const rest = await send({ method: 'OPTIONS' }, '/v1/projects');
    assert.equal(mcp.status, rest.status);
    assert.equal(mcp.status, 405);
    await envelope(mcp, 405, 'bad_request', 'OPTIONS /mcp');
    assert.equal(mcp.headers.get('allow'), 'POST');
  });

  it('refusals of the message itself are JSON-RPC errors; a tool refusal is a tool error in the envelope', async () => {
    const batch = await send({ body: `[${ping}]` });
    assert.equal(batch.status, 400);
    assert.equal(((await batch.json()) as any).error.code, -32600);
    const notRpc = await send({ body: '{"hello":1}' });
    assert.equal(notRpc.status, 400);
    assert.equal(typeof ((await notRpc.json()) as any).error.code, 'number');
    const [unknownTool] = await rpcMessages(await send({ body: JSON.stringify(toolCall('no_such_tool', {})) }));
    assert.equal(unknownTool.error.code, -32602);
    const [bad] = await rpcMessages(await send({ body: JSON.stringify(toolCall('get_project', { handle: 7 })) }));
    assert.equal(bad.result.isError, true);
    assert.equal(bad.result.structuredContent.error.code, 'bad_request');
    assert.deepEqual(JSON.parse(bad.result.content[0].text), bad.result.structuredContent);
  });

  it('over the protocol budget: 429 in the envelope with Retry-After', async () => {
    let res: Response | undefined;
    for (let i = 0; i < 60 && (res === undefined || res.status !== 429); i++) res = await send({ body: ping });
    const limited = await envelope(res!, 429, 'rate_limited', '429');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  });
});

describe('/mcp: no input is echoed unbounded', () => {
  let h: Harness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_THESIS_FEED: 'on' } });
    key = await h.key('echo', ['allow', 'link']);
    await seedBoard(h);
    await recordCall(h, makeCall(0, { createdAt: '2026-11-01T00:00:00.000Z', tokens: 1 }));
    await h.stores.catchUp();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...JSON_HEADERS, ...headers },
      body: JSON.stringify(body),
    });

  /** The answer's body, asserted under 1 KB. */
  async function small(res: Response, label: string): Promise<string> {
    const text = await res.text();
    assert.ok(Buffer.byteLength(text) < 1024, `${label}: ${Buffer.byteLength(text)} bytes: ${text.slice(0, 300)}`);
    return text;
  }

  it('a 5,000-character value into every argument of every tool is a tool error in the envelope, under 1 KB', async () => {
    const listed = await rpcMessages(await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    const tools = listed[0].result.tools as { name: string; inputSchema: { properties: Record<string, unknown> } }[];
    let checked = 0;
    for (const tool of tools) {
      for (const argument of Object.keys(tool.inputSchema.properties)) {
        const label = `${tool.name}.${argument}`;
        const text = await small(await post(toolCall(tool.name, { [argument]: 'é'.repeat(5000) })), label);
        const [answer] = messagesIn(text);
        assert.equal(answer.result?.isError, true, `${label}: ${text}`);
        assert.equal(typeof answer.result.structuredContent.error.code, 'string', label);
        assert.deepEqual(JSON.parse(answer.result.content[0].text), answer.result.structuredContent, label);
        checked += 1;
      }
    }
    assert.ok(checked > 20, `${checked} arguments`);
  });

  it('arguments over the element limit answer in the envelope', async () => {
    const text = await small(
      await post(toolCall('list_projects', { page: Array.from({ length: 500 }, () => 1) })),
      'elements',
    );
    const [answer] = messagesIn(text);
    assert.equal(answer.result.isError, true, text);
    assert.equal(answer.result.structuredContent.error.code, 'bad_request');
  });

  it('an unknown tool, resource or template, and a header/body mismatch, are answered under 1 KB', async () => {
    const long = 'n'.repeat(200_000);
    await small(await post(toolCall(long, {})), 'unknown tool');
    await small(
      await post({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: `other://${long}` } }),
      'unknown resource',
    );
    await small(
      await post({
        jsonrpc: '2.0',
        id: 1,
        method: 'completion/complete',
        params: { ref: { type: 'ref/resource', uri: `other://${long}` }, argument: { name: 'id', value: 'h' } },
      }),
      'unknown template',
    );
    const call = modern('tools/call', { name: long, arguments: {} });
    await small(await post(call.body, { ...call.headers, 'mcp-name': `${long}x` }), 'mcp-name mismatch');
    await small(await post(call.body, { ...call.headers, 'mcp-method': long }), 'mcp-method mismatch');
    const modernTool = modern('tools/call', { name: long, arguments: {} });
    await small(await post(modernTool.body, modernTool.headers), 'unknown tool, 2026-07-28');
    await small(await post(call.body, { ...call.headers, 'mcp-protocol-version': long }), 'protocol version header');
  });

  it('initialize with capabilities: null answers -32602, without a schema dump', async () => {
    const res = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: null, clientInfo: { name: 'raw', version: '1' } },
    });
    const text = await small(res, 'capabilities null');
    const [answer] = messagesIn(text);
    assert.equal(answer.error.code, -32602, text);
  });
});

describe('/mcp with CORS on: OPTIONS is the preflight /v1 gets', () => {
  let h: Harness;
  let base: string;
  const ORIGIN = 'https://app.example.com';

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_CORS_ORIGINS: ORIGIN } });
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  it('answers 204 allowing Authorization on both', async () => {
    for (const path of ['/mcp', '/v1/projects']) {
      const res = await fetch(`${base}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization',
        },
      });
      assert.equal(res.status, 204, path);
      assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN, path);
      assert.match(res.headers.get('access-control-allow-headers') ?? '', /Authorization/, path);
    }
  });
});
