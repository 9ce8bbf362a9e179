import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { restOperations } from '../../api/app.ts';
import { createInProcessHeartbeat } from '../../service/thesis/in-process-heartbeat.ts';
import { seedBoard } from '../mcp/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { prng } from '../support/seed.ts';
import { rawRequest, type RawResponse } from './raw.ts';

/**
 * Hostile traffic, bounded and seeded: every route, method, header and size class, plus requests
 * no client library would send, written straight to a socket. Whatever arrives, the answer is
 * below 500 and every error body is the spec's envelope with a spec code (on /mcp, the JSON-RPC
 * error object of the MCP transport is the protocol's own envelope and is accepted there).
 */
const SEED = 20261122;
const REQUESTS = 3000;
const CONCURRENCY = 8;
const SPEC_CODES = new Set([
  'unauthorized',
  'forbidden',
  'rate_limited',
  'bad_request',
  'not_found',
  'conflict',
  'unavailable',
]);

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

function junk(random: Random, length: number): string {
  const alphabet = 'abcXYZ019-_.~%/?#&=;:@!$\'()*+,[]{}<>"\\ ^`|é漢\u0000\u007f';
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
}

const SIZES = [0, 1, 8, 100, 1_100, 9_000];

function segment(random: Random): string {
  const kind = random();
  if (kind < 0.3) return pick(random, ['h1', 'p001', '@H2', 'p059', '1', 'now', 'nobody']);
  if (kind < 0.45)
    return pick(random, ['2b7e1516-28ae-4d2a-a6f1-9c1f2d3e4a5b', '00000000-0000-0000-0000-000000000000']);
  if (kind < 0.6) return pick(random, ['%E0%A4', '%zz', '%00', '%2F..%2F', '%C3%A9', '..', '%25']);
  if (kind < 0.75) return encodeURIComponent(junk(random, pick(random, SIZES)));
  return 'x'.repeat(pick(random, [1_001, 5_000]));
}

function query(random: Random): string {
  const kind = random();
  if (kind < 0.3) return '';
  const params = [
    'page',
    'since',
    'cursor',
    'limit',
    'include',
    'contract',
    'chain',
    'q',
    'beat',
    'nope',
    'page[]',
    '__proto__',
  ];
  const values = [
    '1',
    '0',
    '-1',
    '999999999999',
    'context',
    'abc',
    '',
    '2026-01-01T00:00:00Z',
    'now',
    '0x' + 'a'.repeat(40),
    '%zz',
    'x'.repeat(1_100),
  ];
  const n = 1 + Math.floor(random() * 4);
  const parts: string[] = [];
  for (let i = 0; i < n; i++)
    parts.push(
      `${pick(random, params)}=${kind < 0.9 ? encodeURIComponent(pick(random, values)) : pick(random, values)}`,
    );
  return `?${parts.join('&')}`;
}

function body(random: Random): string {
  const kind = random();
  if (kind < 0.35) return '';
  if (kind < 0.5) return JSON.stringify({ contract: pick(random, ['0x' + 'a'.repeat(40), 'bad', 1, null]) });
  if (kind < 0.65) {
    const method = pick(random, [
      'initialize',
      'tools/list',
      'tools/call',
      'ping',
      'notifications/initialized',
      'nope',
    ]);
    const message = {
      jsonrpc: pick(random, ['2.0', '1.0']),
      id: pick(random, [1, 'a', null]),
      method,
      params: {
        name: pick(random, ['get_project', 'list_projects', 'search_projects', 'x']),
        arguments: { handle: pick(random, ['h1', 'x'.repeat(300)]), q: 'a' },
      },
    };
    return JSON.stringify(random() < 0.2 ? [message, message] : message);
  }
  if (kind < 0.8) return `{"broken": ${junk(random, 20)}`;
  if (kind < 0.95) return junk(random, pick(random, SIZES));
  return JSON.stringify({ big: 'y'.repeat(1_100_000) });
}

describe('seeded fuzz: every answer below 500 and every error in the envelope', () => {
  let h: Harness;
  let key: string;
  let port: number;
  let paths: { method: string; path: string }[];

  beforeAll(async () => {
    const heartbeat = createInProcessHeartbeat();
    await heartbeat.beat();
    h = await createHarness({ heartbeat, env: { PULSEBOARD_CORS_ORIGINS: 'https://app.example.com' } });
    await seedBoard(h);
    key = await h.key('member', ['allow', 'link']);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
    paths = [
      ...restOperations(h.services).map((op) => ({ method: op.method, path: op.path })),
      ...[
        '/mcp',
        '/healthz',
        '/readyz',
        '/metrics',
        '/docs',
        '/v1/openapi.json',
        '/',
        '/v1',
        '/v1/',
        '/nowhere',
        '*',
      ].map((path) => ({ method: 'GET', path })),
    ];
  });
  afterAll(() => h.close());

  function generated(random: Random): { bytes: string | Buffer; method: string; path: string } {
    const route = pick(random, paths);
    const path = route.path.replace(/:[A-Za-z]+/g, () => segment(random)) + query(random);
    const method =
      random() < 0.55
        ? route.method
        : pick(random, [
            'GET',
            'POST',
            'PUT',
            'DELETE',
            'PATCH',
            'OPTIONS',
            'HEAD',
            'TRACE',
            'PROPFIND',
            'get',
            'FROB',
            'G ET',
          ]);
    const headers: string[] = ['Host: localhost', 'Connection: close'];
    const auth = random();
    if (auth < 0.55) headers.push(`Authorization: Bearer ${key}`);
    else if (auth < 0.7)
      headers.push(
        pick(random, [
          'Authorization: Bearer pbk_' + 'A'.repeat(43),
          'Authorization: Basic abc',
          'Authorization: Bearer',
          `Authorization: Bearer ${'k'.repeat(5_000)}`,
        ]),
      );
    if (random() < 0.4)
      headers.push(
        `Accept-Encoding: ${pick(random, ['gzip', 'br', 'gzip, br', 'deflate', '*', 'identity;q=0', 'x'.repeat(300)])}`,
      );
    if (random() < 0.3)
      headers.push(
        `Accept: ${pick(random, ['application/json, text/event-stream', 'application/json', 'text/html', '*/*'])}`,
      );
    if (random() < 0.2) headers.push(`If-None-Match: ${pick(random, ['*', 'W/"abc"', '"x", W/"y"', 'garbage'])}`);
    if (random() < 0.25)
      headers.push(`X-Request-Id: ${pick(random, ['ok-id-1', 'bad id', 'x'.repeat(500), '<script>', ''])}`);
    if (random() < 0.2)
      headers.push(`Origin: ${pick(random, ['https://app.example.com', 'https://evil.example', 'null'])}`);
    if (random() < 0.15) headers.push(`Access-Control-Request-Method: ${pick(random, ['GET', 'POST', 'DELETE'])}`);
    if (random() < 0.1) headers.push(`Mcp-Protocol-Version: ${pick(random, ['2025-06-18', '1999-01-01', ''])}`);
    const sizeClass = random();
    if (sizeClass < 0.05) headers.push(`X-Padding: ${'p'.repeat(20_000)}`);
    else if (sizeClass < 0.15) headers.push(`X-Padding: ${'p'.repeat(8_000)}`);
    const payload = body(random);
    if (payload !== '' || random() < 0.1) {
      headers.push(
        `Content-Type: ${pick(random, ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])}`,
      );
      if (random() < 0.1) headers.push(`Content-Encoding: ${pick(random, ['gzip', 'br', 'bogus'])}`);
      const framing = random();
      if (framing < 0.8) headers.push(`Content-Length: ${Buffer.byteLength(payload)}`);
      else if (framing < 0.9) {
        headers.push('Transfer-Encoding: chunked');
        return {
          bytes: `${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n${Buffer.byteLength(payload).toString(16)}\r\n${payload}\r\n0\r\n\r\n`,
          method,
          path,
        };
      } else headers.push(`Content-Length: ${Math.max(0, Buffer.byteLength(payload) - 3)}`);
    }
    return { bytes: `${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n${payload}`, method, path };
  }

  /** Requests no client would send: broken framing, broken request lines, other protocols. */
  const MALFORMED: string[] = [
    'GET /v1/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nab\r\n0\r\n\r\n',
    'POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked, bogus\r\n\r\n',
    'GET /v1/projects HTTP/9.9\r\nHost: x\r\n\r\n',
    'GET /v1/projects\r\n\r\n',
    'GET\r\n\r\n',
    // Leading empty lines are skipped by the parser (RFC 9112 §2.2), so garbage must follow them.
    '\r\n\r\n\u0001\u0002garbage\r\n\r\n',
    'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    'GET /v1/projects HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
    'GET /v1/projects HTTP/1.1\r\nHost: x\r\n: empty-name\r\n\r\n',
    'GET /v1/projects HTTP/1.1\r\nHost: x\r\nX: a\u0000b\r\n\r\n',
    'GET /v1/pro jects HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET http://evil.example/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /v1/projects HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
    'GET /v1/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n',
    '\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003',
    `GET /${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
  ];

  function check(
    where: string,
    method: string,
    path: string,
    res: RawResponse | null | 'timeout',
    problems: string[],
  ): void {
    if (res === 'timeout') {
      problems.push(`${where}: no answer in time`);
      return;
    }
    if (res === null) {
      problems.push(`${where}: connection closed without an answer`);
      return;
    }
    if (res.status >= 500) problems.push(`${where}: ${res.status} ${res.body.slice(0, 200)}`);
    if (res.status < 400 || method === 'HEAD') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      problems.push(`${where}: ${res.status} body is not JSON: ${JSON.stringify(res.body.slice(0, 120))}`);
      return;
    }
    const error = (parsed as { error?: { code?: unknown; message?: unknown } }).error;
    const enveloped =
      Object.keys(parsed as object).length === 1 &&
      error !== undefined &&
      Object.keys(error).join() === 'code,message' &&
      typeof error.message === 'string';
    if (enveloped && SPEC_CODES.has(error.code as string)) return;
    const jsonRpc =
      (parsed as { jsonrpc?: unknown }).jsonrpc === '2.0' &&
      typeof (error as { code?: unknown } | undefined)?.code === 'number';
    if (jsonRpc && path.split('?')[0] === '/mcp') return;
    problems.push(`${where}: ${res.status} outside the envelope: ${res.body.slice(0, 200)}`);
  }

  it(`${REQUESTS} generated requests and ${MALFORMED.length} malformed ones (seed ${SEED})`, async () => {
    const random = prng(SEED);
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    const cases = Array.from({ length: REQUESTS }, (_, i) => ({ i, ...generated(random) }));
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++]!;
        const res = await rawRequest(port, c.bytes, 3_000);
        if (res && res !== 'timeout') statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        check(`#${c.i} ${c.method} ${c.path.slice(0, 80)}`, c.method, c.path, res, problems);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    for (const [i, bytes] of MALFORMED.entries()) {
      const res = await rawRequest(port, bytes, 3_000);
      if (res && res !== 'timeout') statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      check(`malformed #${i} ${JSON.stringify(bytes.slice(0, 40))}`, 'RAW', '', res, problems);
    }
    // The spread shows the fuzz reached past the front door (successes, 304s, 4xx of every kind).
    const seen = [...statuses.keys()].sort();
    assert.ok(
      seen.includes(200) && seen.includes(401) && seen.includes(404) && seen.includes(400),
      `statuses seen: ${seen.join(', ')}`,
    );
    assert.deepEqual(problems.slice(0, 40), [], `${problems.length} problems`);
  });
});
