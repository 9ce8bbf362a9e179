/** A body refused for a prototype-poisoning key is valid JSON: the refusal says so, on every POST route. */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await createHarness();
  key = await h.key('member', ['allow', 'link']);
});
afterAll(() => h.close());

const post = (url: string, payload: string | Buffer, encoding?: string) =>
  h.app.inject({
    method: 'POST',
    url,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(encoding ? { 'content-encoding': encoding } : {}),
    },
    payload,
  });

it('a poisoning key is refused as such, a syntax error as invalid JSON, compressed or not', async () => {
  for (const url of ['/mcp', '/v1/thesisfeed/theses']) {
    for (const [payload, encoding] of [
      ['{"__proto__":{"x":1}}', undefined],
      [gzipSync('{"constructor":{"prototype":{"x":1}}}'), 'gzip'],
    ] as const) {
      const res = await post(url, payload, encoding);
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      // Refused before the JSON-RPC message is read: the envelope on both.
      assert.equal(res.json().error.code, 'bad_request');
      assert.doesNotMatch(res.json().error.message, /not valid JSON/, url);
      assert.match(res.json().error.message, /not accepted/, url);
    }
    const broken = await post(url, '{"jsonrpc":');
    assert.deepEqual(broken.json(), { error: { code: 'bad_request', message: 'request body is not valid JSON' } });
  }
});
