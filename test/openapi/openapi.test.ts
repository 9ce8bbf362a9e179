import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { z } from 'zod';
import { restOperations } from '../../api/app.ts';
import { buildOpenApiDocument } from '../../api/openapi.ts';
import type { RestOperation } from '../../api/operation.ts';
import { thesisErrorSchema, thesisStatusSchema } from '../../readmodels/schemas.ts';
import { intParam } from '../../service/requests/params.ts';
import { callId, makeCall } from '../support/calls-fixtures.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { matchPath, validateResponse } from '../support/openapi-validator.ts';

/** Every `$ref` value in a JSON tree. */
function refsIn(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refsIn(item, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

function resolve(doc: any, ref: string): any {
  assert.ok(ref.startsWith('#/'), `local ref ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((node, part) => node?.[part], doc);
}

describe('the OpenAPI document and the docs page', () => {
  let h: Harness;
  let doc: any;

  beforeAll(async () => {
    h = await createHarness();
    const res = await h.get('/v1/openapi.json');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    doc = res.json();
  });
  afterAll(() => h.close());

  it('is served without a key, as OpenAPI 3.1 version 1.0.0 with the bearer scheme on every operation', async () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1.0.0');
    assert.deepEqual(
      doc.servers.map((s: any) => s.url),
      ['/v1'],
    );
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      description: doc.components.securitySchemes.bearerAuth.description,
    });
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    const key = await h.key('reader');
    assert.deepEqual((await h.get('/v1/openapi.json', key)).json(), doc);
  });

  it('describes exactly the operations the app serves, each with its success body, its errors and the error envelope', () => {
    const ops = restOperations(h.services);
    const described: string[] = [];
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        described.push(op.operationId);
        const served = ops.find((o) => o.operationId === op.operationId)!;
        assert.ok(served, op.operationId);
        assert.equal(method, served.method.toLowerCase());
        assert.equal(`/v1${path}`, served.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}'));
        const statuses = Object.keys(op.responses).map(Number);
        for (const s of [200, 400, 401, 429, 500, 503])
          assert.ok(statuses.includes(s), `${op.operationId} documents ${s}`);
        for (const s of Object.keys(served.errors).map(Number))
          assert.ok(statuses.includes(s), `${op.operationId} documents its own ${s}`);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          // A 304 has no body; it carries the validator it matched.
          if (status === '304') {
            assert.equal(method, 'get');
            assert.equal(response.content, undefined);
            assert.ok(response.headers.ETag, `${op.operationId} 304 ETag`);
            continue;
          }
          // The change stream's 200 is text/event-stream; its events' data is named beside the text schema.
          const stream = response.content['text/event-stream'];
          const ref = stream ? stream['x-event-data'].$ref : response.content['application/json'].schema.$ref;
          // The error envelope, or the operation's own (thesis-feed codes are unconstrained, spec 2.11).
          if (Number(status) >= 400 && !served.errorSchema)
            assert.equal(ref, '#/components/schemas/Error', `${op.operationId} ${status}`);
          assert.ok(resolve(doc, ref), `${op.operationId} ${status} ${ref}`);
        }
        assert.ok(op.responses['429'].headers['Retry-After']);
        assert.ok(
          op.responses['429'].headers['RateLimit-Policy'] && op.responses['429'].headers.RateLimit,
          'the IETF draft headers are documented',
        );
        assert.ok(op.responses['503'].headers['Retry-After']);
        // A change stream is never revalidated; every other read documents its ETag and 304.
        if (op.responses['200']?.content?.['text/event-stream'])
          assert.ok(!op.responses['304'] && !op.responses['200'].headers.ETag, `${op.operationId} has no ETag`);
        else if (method === 'get')
          assert.ok(
            op.responses['304'] && op.responses['200'].headers.ETag,
            `${op.operationId} documents its ETag and 304`,
          );
      }
    }
    assert.deepEqual(described.sort(), ops.map((o) => o.operationId).sort());
    for (const id of ['listCalltrackerCalls', 'getCalltrackerCall', 'searchProjects', 'listPulse', 'getPulseBeat'])
      assert.ok(described.includes(id), id);
    const detail = doc.paths['/calltracker/calls/{id}'].get.responses;
    assert.ok(detail['404'] && detail['400']);
    assert.ok(doc.paths['/pulse/{beat}'].get.responses['404']);
    const changes = doc.paths['/projects/changes'].get.responses;
    assert.deepEqual(Object.keys(changes['200'].content), ['text/event-stream']);
    assert.equal(changes['200'].content['text/event-stream']['x-event-data'].$ref, '#/components/schemas/Project');
    assert.deepEqual(Object.keys(changes['400'].content), ['application/json']);
    assert.ok(doc.paths['/projects'].get.parameters.some((p: { name: string }) => p.name === 'wait'));
    assert.match(doc.paths['/calltracker/calls'].get.responses['503'].description, /Rate protection is unavailable/);
  });

  it('resolves every $ref, and every component schema is valid JSON Schema 2020-12', () => {
    for (const ref of refsIn(doc)) assert.ok(resolve(doc, ref) !== undefined, `unresolved ${ref}`);
    const ajv = new Ajv2020({ strict: false });
    for (const [id, schema] of Object.entries(doc.components.schemas)) {
      assert.ok(ajv.validateSchema(schema as object), `${id}: ${ajv.errorsText(ajv.errors)}`);
    }
  });

  it('describes request parameters from the same zod schemas that validate them', () => {
    const params = (path: string) => Object.fromEntries(doc.paths[path].get.parameters.map((p: any) => [p.name, p]));
    // Each operation's parameters are the members of its path and query schemas, so a new filter needs no edit here.
    for (const op of restOperations(h.services)) {
      const path = op.path.replace(/^\/v1/, '').replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const described = (doc.paths[path][op.method.toLowerCase()].parameters ?? []).map(
        (p: any) => `${p.in} ${p.name}`,
      );
      const fromSchemas = (['params', 'query'] as const).flatMap((part) =>
        Object.keys((op.request[part] as z.ZodObject | undefined)?.shape ?? {}).map(
          (name) => `${part === 'params' ? 'path' : 'query'} ${name}`,
        ),
      );
      assert.deepEqual(described.sort(), fromSchemas.sort(), op.operationId);
    }
    const calls = params('/calltracker/calls');
    assert.deepEqual(calls.limit.schema, { type: 'integer', minimum: 1, maximum: 30 });
    assert.deepEqual(calls.maxBytes.schema, { type: 'integer', minimum: 4096, maximum: 524288 });
    assert.equal(calls.cursor.schema.maxLength, 512);
    assert.equal(calls.contract.schema.maxLength, 100);
    assert.equal(calls.chain.schema.maxLength, 60);
    assert.ok(Object.values(calls).every((p: any) => p.in === 'query' && p.required === false && p.description));
    const q = params('/search').q;
    assert.equal(q.required, true);
    assert.equal(q.schema.minLength, 1);
    assert.equal(q.schema.maxLength, 512);
    const id = params('/calltracker/calls/{id}').id;
    assert.equal(id.in, 'path');
    assert.equal(id.required, true);
    assert.equal(id.schema.format, 'uuid');
    assert.equal(params('/pulse/{beat}').beat.in, 'path');
    assert.deepEqual(doc.paths['/pulse'].get.parameters, []);
  });

  it('describes the call record with no additional properties anywhere and the spec limits', () => {
    const call = doc.components.schemas.CalltrackerCall;
    assert.equal(call.properties.thesisText.maxLength, 12000);
    assert.equal(call.properties.tokens.minItems, 1);
    assert.equal(call.properties.tokens.maxItems, 20);
    const seen = new Set<unknown>();
    const walk = (node: any) => {
      if (!node || typeof node !== 'object' || seen.has(node)) return;
      seen.add(node);
      if (node.$ref) return walk(resolve(doc, node.$ref));
      if (node.type === 'object') assert.equal(node.additionalProperties, false, JSON.stringify(node).slice(0, 120));
      for (const v of Object.values(node)) walk(v);
    };
    walk(call);
    assert.ok(seen.size > 20);
    const page = doc.components.schemas.CallPage;
    assert.equal(page.properties.calls.maxItems, 30);
    assert.deepEqual(page.properties.next.anyOf, [{ type: 'string', maxLength: 512 }, { type: 'null' }]);
    assert.equal(doc.components.schemas.PulseList.properties.beats.minItems, 8);
    assert.deepEqual(doc.components.schemas.Error.properties.error.properties.code.enum, [
      'unauthorized',
      'forbidden',
      'rate_limited',
      'bad_request',
      'not_found',
      'conflict',
      'unavailable',
    ]);
  });

  it('gives the validator teeth: bodies off the document and undocumented statuses are rejected', () => {
    const record = {
      ...makeCall(1, { createdAt: day(1) }),
      tokens: [{ ...makeCall(1, { createdAt: day(1) }).tokens[0], project: null }],
    };
    const page = {
      calls: [record],
      next: null,
      limit: 20,
      readAt: day(2),
      freshness: { checkedAt: null, completeAt: null, lastAttemptComplete: null },
    };
    assert.deepEqual(validateResponse(doc, 'GET', '/v1/calltracker/calls', 200, page), { ok: true });
    const bad = [
      { ...page, extra: 1 },
      { ...page, calls: [{ ...record, thesisText: 'x'.repeat(12001) }] },
      { ...page, calls: [{ ...record, tokens: [] }] },
      { ...page, calls: [{ ...record, id: 'not-a-uuid' }] },
      { ...page, limit: 31 },
      { ...page, next: 'n'.repeat(513) },
    ];
    for (const body of bad) assert.equal(validateResponse(doc, 'GET', '/v1/calltracker/calls', 200, body).ok, false);
    assert.equal(
      validateResponse(doc, 'GET', '/v1/calltracker/calls', 404, { error: { code: 'not_found', message: 'x' } }).ok,
      false,
    );
    assert.equal(validateResponse(doc, 'GET', '/v1/pulse', 400, { error: { code: 'teapot', message: 'x' } }).ok, false);
    assert.equal(matchPath(doc, `/v1/calltracker/calls/${callId(1)}?x=1`), '/calltracker/calls/{id}');
    assert.equal(matchPath(doc, '/v1/nowhere'), null);
  });

  it('serves the interactive docs page and its assets without a key, all from this origin', async () => {
    const res = await h.get('/docs');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self';/);
    assert.match(csp, /connect-src 'self';/);
    const html = res.body;
    // Every asset is same-origin, and is served: nothing is fetched from elsewhere, so it works offline.
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(assets.includes('/docs/swagger-ui-bundle.js') && assets.includes('/docs/init.js'), html);
    for (const asset of assets) {
      assert.match(asset, /^\/(docs|v1)\//, asset);
      const got = await h.get(asset);
      assert.equal(got.status, 200, asset);
    }
    assert.doesNotMatch(html, /https?:|@import|url\(/i);
    const init = await h.get('/docs/init.js');
    assert.match(init.body, /url: '\/v1\/openapi\.json'/);
    assert.match(init.body, /validatorUrl: null/);
  });

  it('describes a JSON request body, several success statuses and an operation-specific error envelope', () => {
    const op: RestOperation = {
      operationId: 'requestSomething',
      method: 'POST',
      path: '/v1/things/:kind',
      summary: 's',
      tags: ['t'],
      protection: () => 'protected',
      request: {
        params: z.object({ kind: z.string().max(10) }).strict(),
        body: z.object({ contract: z.string().describe('The contract.'), count: intParam(1, 5).optional() }).strict(),
      },
      responses: {
        200: { description: 'hit', schema: thesisStatusSchema },
        202: { description: 'queued', schema: thesisStatusSchema },
      },
      errors: { 403: 'not linked' },
      errorSchema: thesisErrorSchema,
      run: async () => ({ ok: true, value: { body: null } }),
    };
    const built = buildOpenApiDocument([op]) as any;
    const described = built.paths['/things/{kind}'].post;
    assert.deepEqual(described.requestBody.content['application/json'].schema, {
      type: 'object',
      properties: {
        contract: { type: 'string', description: 'The contract.' },
        count: { type: 'integer', minimum: 1, maximum: 5 },
      },
      required: ['contract'],
      additionalProperties: false,
    });
    assert.equal(
      described.responses['200'].content['application/json'].schema.$ref,
      '#/components/schemas/ThesisStatus',
    );
    assert.equal(
      described.responses['202'].content['application/json'].schema.$ref,
      '#/components/schemas/ThesisStatus',
    );
    for (const s of ['400', '401', '403', '429', '500', '503']) {
      assert.equal(
        described.responses[s].content['application/json'].schema.$ref,
        '#/components/schemas/ThesisError',
        s,
      );
    }
    assert.equal(described.responses['403'].description, 'not linked');
    assert.throws(() => buildOpenApiDocument([{ ...op, path: '/elsewhere' }]), /outside \/v1/);
  });
});
