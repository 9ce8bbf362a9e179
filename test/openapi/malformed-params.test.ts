import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { assertResponse } from '../support/openapi-validator.ts';

/**
 * Drives every parameter of every operation in the served document with malformed values derived
 * from its own schema: each must be 400 `bad_request` naming the parameter, never a 500.
 */

type Schema = Record<string, any>;

/** A value the schema accepts, for the parameters not under test. */
function validValue(name: string, schema: Schema): string {
  if (schema.format === 'uuid') return '00000000-0000-4000-8000-000000000000';
  if (schema.format === 'date-time') return '2026-11-20T08:00:00Z';
  if (schema.type === 'integer' || schema.type === 'number') return String(schema.minimum ?? 1);
  if (Array.isArray(schema.enum)) return String(schema.enum[0]);
  if (Array.isArray(schema.anyOf)) return validValue(name, schema.anyOf[0]);
  if (schema.type === 'boolean') return 'true';
  if (typeof schema.pattern === 'string') {
    const candidates = ['abc', '0x0000000000000000000000000000000000000001', 'a1'];
    const fit = candidates.find((c) => new RegExp(schema.pattern, 'u').test(c));
    if (fit) return fit;
  }
  return name === 'beat' ? 'funding' : 'abc';
}

/** Malformed values, each paired with what it breaks. */
function malformedValues(schema: Schema, where: 'query' | 'path'): [string, string][] {
  const out: [string, string][] = [];
  const alternatives: Schema[] = Array.isArray(schema.anyOf) ? schema.anyOf : [schema];
  const types = new Set(alternatives.map((s) => s.type));
  if (types.has('integer') || types.has('number')) {
    out.push(['abc', 'not a number']);
    if (types.has('integer')) out.push(['1.5', 'not whole']);
    const bounded = alternatives.find((s) => s.type === 'integer' || s.type === 'number')!;
    if (bounded.minimum !== undefined) out.push([String(bounded.minimum - 1), 'below minimum']);
    if (bounded.maximum !== undefined && bounded.maximum < Number.MAX_SAFE_INTEGER)
      out.push([String(bounded.maximum + 1), 'above maximum']);
  }
  if (types.has('boolean')) out.push(['maybe', 'not a boolean']);
  for (const s of alternatives) {
    if (s.type !== 'string') continue;
    if (types.has('boolean') && Array.isArray(s.enum)) continue;
    if (Array.isArray(s.enum)) out.push(['not-a-value', 'not in the enum']);
    if (s.format === 'date-time') out.push(['yesterday', 'not a date-time']);
    if (s.format === 'uuid') out.push(['not-a-uuid', 'not a uuid']);
    if (typeof s.maxLength === 'number') out.push(['x'.repeat(s.maxLength + 1), 'too long']);
    if (where === 'query' && (s.minLength ?? 0) >= 1) out.push(['', 'empty']);
    if (typeof s.pattern === 'string' && !s.format) {
      const breaking = [' x', '"', 'é', '!'].find((c) => !new RegExp(s.pattern, 'u').test(c));
      if (breaking) out.push([breaking, 'off the pattern']);
    }
  }
  return out;
}

describe('malformed parameters on every operation', () => {
  let h: Harness;
  let key: string;
  let doc: any;

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('member', ['allow', 'link']);
    doc = (await h.get('/v1/openapi.json')).json();
  });
  afterAll(() => h.close());

  async function send(method: string, url: string) {
    const res = await h.app.inject({
      method: method.toUpperCase() as 'GET',
      url,
      headers: { authorization: `Bearer ${key}`, ...(method === 'get' ? {} : { 'content-type': 'application/json' }) },
      ...(method === 'get' ? {} : { payload: '{}' }),
    });
    const body = JSON.parse(res.body);
    assertResponse(doc, method, url, res.statusCode, body);
    return { status: res.statusCode, body };
  }

  function urlFor(
    path: string,
    parameters: any[],
    override: { name: string; value: string | string[] } | null,
    extra = '',
  ): string {
    let concrete = path;
    const query: string[] = [];
    for (const p of parameters) {
      const value =
        override && override.name === p.name ? override.value : p.required ? validValue(p.name, p.schema) : null;
      if (value === null) continue;
      if (p.in === 'path') concrete = concrete.replace(`{${p.name}}`, encodeURIComponent(String(value)));
      else
        for (const v of Array.isArray(value) ? value : [value])
          query.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(v)}`);
    }
    if (extra) query.push(extra);
    return `/v1${concrete}${query.length > 0 ? `?${query.join('&')}` : ''}`;
  }

  it('answers 400 naming the parameter for each malformed value of each parameter, and for repeated query parameters', async () => {
    let cases = 0;
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        for (const param of op.parameters as any[]) {
          const values: [string | string[], string][] = malformedValues(param.schema, param.in);
          if (param.in === 'query') {
            const ok = validValue(param.name, param.schema);
            values.push([[ok, ok], 'repeated']);
          }
          assert.ok(
            values.length > 0,
            `${op.operationId} ${param.name}: no malformed value derived from ${JSON.stringify(param.schema)}`,
          );
          for (const [value, why] of values) {
            const url = urlFor(path, op.parameters, { name: param.name, value });
            const res = await send(method, url);
            assert.equal(
              res.status,
              400,
              `${op.operationId} ${param.name} ${why}: ${url} → ${res.status} ${JSON.stringify(res.body)}`,
            );
            assert.equal(res.body.error.code, 'bad_request');
            assert.ok(
              res.body.error.message.includes(`'${param.name}'`),
              `${op.operationId} ${param.name} ${why}: ${res.body.error.message}`,
            );
            cases += 1;
          }
        }
      }
    }
    assert.ok(cases >= 30, `${cases} cases`);
  });

  it('answers 400 naming an unknown query parameter on every operation that reads the query', async () => {
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        // Body-only writes are left out: a request there that slipped through would act.
        if (method !== 'get' && !op.parameters.some((p: any) => p.in === 'query')) continue;
        const res = await send(method, urlFor(path, op.parameters, null, 'bogus_param=1'));
        assert.equal(res.status, 400, `${op.operationId}: ${JSON.stringify(res.body)}`);
        assert.match(res.body.error.message, /unknown parameter 'bogus_param'/);
      }
    }
  });
});
