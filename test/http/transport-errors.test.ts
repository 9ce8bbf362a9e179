import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { rawRequest, type RawResponse } from './raw.ts';

const SPEC_CODES = ['unauthorized', 'forbidden', 'rate_limited', 'bad_request', 'not_found', 'conflict', 'unavailable'];

function assertEnvelope(res: RawResponse | null | 'timeout', status: number, code: string): RawResponse {
  assert.ok(res && res !== 'timeout', 'an answer, not a dropped connection');
  assert.equal(res.status, status, res.body);
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
  const body = JSON.parse(res.body);
  assert.deepEqual(Object.keys(body), ['error']);
  assert.deepEqual(Object.keys(body.error), ['code', 'message']);
  assert.equal(body.error.code, code);
  assert.ok(SPEC_CODES.includes(body.error.code));
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  return res;
}

describe('transport-level rejections get the envelope and echo nothing', () => {
  let h: Harness;
  let key: string;
  let port: number;

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('member', ['allow', 'link']);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
  });
  afterAll(() => h.close());

  const request = (head: string, body = '') => rawRequest(port, `${head}\r\nHost: localhost\r\n\r\n${body}`);

  it('headers over the limit: 431', async () => {
    const res = await rawRequest(
      port,
      `GET /v1/projects HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assertEnvelope(res, 431, 'bad_request');
  });

  it('an over-long path segment is 401 without a key, 414 with one, and never echoes the path', async () => {
    const long = `handle-${'z'.repeat(10_000)}`;
    const anonymous = assertEnvelope(await request(`GET /v1/projects/${long} HTTP/1.1`), 401, 'unauthorized');
    assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="pulseboard"');
    assert.ok(!anonymous.body.includes('zzzz'));
    const keyed = assertEnvelope(
      await request(`GET /v1/projects/${long} HTTP/1.1\r\nAuthorization: Bearer ${key}`),
      414,
      'bad_request',
    );
    assert.ok(!keyed.body.includes('zzzz'));
    assert.ok(keyed.body.length < 200);
  });

  it('bad percent-encoding: 401 without a key, 400 with one', async () => {
    assertEnvelope(await request('GET /v1/projects/%E0%A4echo-me HTTP/1.1'), 401, 'unauthorized');
    const keyed = assertEnvelope(
      await request(`GET /v1/projects/%E0%A4echo-me HTTP/1.1\r\nAuthorization: Bearer ${key}`),
      400,
      'bad_request',
    );
    assert.ok(!keyed.body.includes('echo-me'));
  });

  it('an unknown method, bad chunking and a duplicate Content-Length are 400 bad_request', async () => {
    assertEnvelope(await request('FROBNICATE /v1/projects HTTP/1.1'), 400, 'bad_request');
    assertEnvelope(
      await request(
        'POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json',
        'zz\r\n{}\r\n0\r\n\r\n',
      ),
      400,
      'bad_request',
    );
    assertEnvelope(
      await request(
        'POST /mcp HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\nContent-Type: application/json',
        '{}',
      ),
      400,
      'bad_request',
    );
    assertEnvelope(
      await rawRequest(port, 'GET /v1/projects HTTP/1.1\r\nHost: localhost\r\nBad Header Name: x\r\n\r\n'),
      400,
      'bad_request',
    );
  });

  it('a server still answers normally after the rejections', async () => {
    const res = await request(`GET /v1/projects HTTP/1.1\r\nAuthorization: Bearer ${key}\r\nConnection: close`);
    assert.equal(res !== 'timeout' && res?.status, 200);
  });
});

describe('request bodies with a Content-Encoding', () => {
  it('accepts gzip, refuses an unknown encoding (415) and an undecodable body (400), in the envelope', async () => {
    const { gzipSync } = await import('node:zlib');
    const h = await createHarness();
    try {
      const key = await h.key('member', ['allow', 'link']);
      const headers = (encoding: string) => ({
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-encoding': encoding,
      });
      const gz = await h.app.inject({
        method: 'POST',
        url: '/v1/thesisfeed/theses',
        headers: headers('gzip'),
        payload: gzipSync('{"contract":"x"}'),
      });
      assert.equal(gz.statusCode, 400);
      assert.match(gz.json().error.message, /contract/, 'the body was decompressed and validated');
      const unknown = await h.app.inject({
        method: 'POST',
        url: '/v1/thesisfeed/theses',
        headers: headers('bogus'),
        payload: '{}',
      });
      assert.equal(unknown.statusCode, 415);
      assert.deepEqual(unknown.json(), {
        error: { code: 'bad_request', message: 'unsupported Content-Encoding; send the body as it is, or gzip or br' },
      });
      const broken = await h.app.inject({
        method: 'POST',
        url: '/v1/thesisfeed/theses',
        headers: headers('gzip'),
        payload: 'not gzip at all',
      });
      assert.equal(broken.statusCode, 400);
      assert.equal(broken.json().error.code, 'bad_request');
    } finally {
      await h.close();
    }
  });
});

/** The JSON-RPC message of an /mcp answer: a JSON body, or the one event of a 2025-era SSE answer. */
const rpcOf = (body: string): unknown =>
  JSON.parse(
    body.startsWith('event:')
      ? body
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6)
      : body,
  );

describe('request bodies on /mcp, decoded by its JSON parser', () => {
  it('decodes gzip, deflate and br, and refuses what the other POST routes refuse, with the same answers', async () => {
    const { gzipSync, deflateSync, brotliCompressSync } = await import('node:zlib');
    const h = await createHarness();
    try {
      const key = await h.key('member', ['allow', 'link']);
      const post = (url: string, encoding: string | undefined, payload: string | Buffer) =>
        h.app.inject({
          method: 'POST',
          url,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(encoding === undefined ? {} : { 'content-encoding': encoding }),
          },
          payload,
        });
      const ping = '{"jsonrpc":"2.0","id":7,"method":"ping"}';
      for (const [encoding, encode] of [
        ['gzip', gzipSync],
        ['deflate', deflateSync],
        ['br', brotliCompressSync],
        ['identity', (text: string) => Buffer.from(text)],
      ] as const) {
        const answered = await post('/mcp', encoding, encode(ping));
        assert.equal(answered.statusCode, 200, `${encoding}: ${answered.body}`);
        assert.deepEqual(rpcOf(answered.body), { result: {}, jsonrpc: '2.0', id: 7 }, encoding);
      }
      // Taken as Fastify's own parser takes them: a leading byte order mark, and the risky names as values or inside other keys.
      for (const body of [
        '\ufeff{"jsonrpc":"2.0","id":7,"method":"ping"}',
        '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"note":"__proto__","other":"constructor"}}',
        '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x__proto__":1,"\\u0041":"\\u00e9"}}',
      ]) {
        const answered = await post('/mcp', undefined, body);
        assert.equal(answered.statusCode, 200, `${body}: ${answered.body}`);
        assert.deepEqual(rpcOf(answered.body), { result: {}, jsonrpc: '2.0', id: 7 }, body);
      }
      // Each refusal as the thesis feed's POST (decoded by @fastify/compress) gives it.
      const oversized = gzipSync(Buffer.from(`{"pad":"${' '.repeat(1024 * 1024 + 16)}"}`));
      const refusals: [string | undefined, string | Buffer, number][] = [
        ['bogus', '{}', 415],
        ['gzip', 'not gzip at all', 400],
        ['gzip', oversized, 413],
        ['gzip', gzipSync('{not json'), 400],
        ['gzip', gzipSync('{"__proto__":{"x":1}}'), 400],
        [undefined, '{"constructor":{"prototype":{"x":1}}}', 400],
        [undefined, '', 400],
        // Keys that JSON.parse alone would take: escaped, nested, or after whitespace.
        [undefined, '{"\\u005f_proto__":{"x":1}}', 400],
        [undefined, '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":{"__proto__" :{"x":1}}}}', 400],
        [undefined, '{"c\\u006fnstructor":{"prototype":{"x":1}}}', 400],
        ['identity', '{"constructor":{"prototype":{"x":1}}}', 400],
        [undefined, '  \n ', 400],
        [undefined, '{"jsonrpc":"2.0","id":1,"method":"ping"', 400],
      ];
      for (const [encoding, payload, status] of refusals) {
        const mcp = await post('/mcp', encoding, payload);
        const rest = await post('/v1/thesisfeed/theses', encoding, payload);
        const label = `${encoding ?? 'no encoding'}: ${String(payload).slice(0, 20)}`;
        assert.equal(mcp.statusCode, status, `${label}: ${mcp.body}`);
        assert.equal(rest.statusCode, status, `${label} (REST): ${rest.body}`);
        // Refused before the JSON-RPC message is read: the envelope REST gives, on /mcp too.
        assert.deepEqual(mcp.json(), rest.json(), label);
      }
    } finally {
      await h.close();
    }
  });
});

describe('worker roles share the plumbing', () => {
  it('answers unknown paths, parser refusals and its health routes with the envelope, request ids and nosniff', async () => {
    const { buildWorkerApp } = await import('../../api/app.ts');
    const h = await createHarness();
    const worker = buildWorkerApp(h.services);
    try {
      await worker.listen({ host: '127.0.0.1', port: 0 });
      const workerPort = (worker.server.address() as AddressInfo).port;
      const health = await worker.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'worker-1' } });
      assert.equal(health.statusCode, 200);
      assert.equal(health.headers['x-request-id'], 'worker-1');
      assert.equal(health.headers['x-content-type-options'], 'nosniff');
      assert.equal((await worker.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
      const missing = await worker.inject({ method: 'GET', url: '/v1/projects' });
      assert.equal(missing.statusCode, 404);
      assert.deepEqual(Object.keys(missing.json().error), ['code', 'message']);
      assertEnvelope(await rawRequest(workerPort, 'FROB / HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'bad_request');
      assertEnvelope(
        await rawRequest(workerPort, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
        431,
        'bad_request',
      );
    } finally {
      await worker.close();
      await h.close();
    }
  });
});
