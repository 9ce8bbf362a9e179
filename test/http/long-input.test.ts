/**
 * No input is echoed unbounded: a 5,000-character value (and one of the longest length each
 * parameter accepts) in every query parameter and path segment of every operation the OpenAPI
 * document lists is answered, when refused, with a small error envelope that repeats at most 100
 * characters of it. The parameters come from the served document, so a new one is covered as added.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, it } from 'vitest';
import { appendSightings } from '../live/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';

type Schema = {
  type?: string;
  format?: string;
  pattern?: string;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maxLength?: number;
  anyOf?: Schema[];
};
type Parameter = { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: Schema };
type Operation = { method: string; path: string; parameters: Parameter[] };

const LONG = 5_000;
/** A time before every write of the test: a point on the board's past that the reads accept. */
const EARLY = '2026-01-01T00:00:00Z';
const PROJECT = 'lg-1';

/** Values of `length` characters in three shapes: plain, needing escapes, and a date-time. */
function longValues(length: number): string[] {
  const mixed = 'é\'\\\u2028"<>%x';
  return [
    'x'.repeat(length),
    mixed.repeat(Math.ceil(length / mixed.length)).slice(0, length),
    `2026-01-01T00:00:00.${'0'.repeat(length - 21)}Z`,
  ];
}

/**
 * A value a parameter accepts, to fill the others while one is tested: from its schema (an enum's
 * first value, an integer's minimum, a UUID, a pattern's match); a free-text path segment names a
 * project on the board, free query text is a time (what the point parameters take).
 */
function fillerOf(parameter: Parameter, schema: Schema = parameter.schema): string | undefined {
  if (schema.anyOf) return fillerOf(parameter, schema.anyOf[0]);
  if (schema.const !== undefined) return String(schema.const);
  if (schema.enum) return String(schema.enum[0]);
  if (schema.type === 'integer') return String(schema.minimum ?? 1);
  if (schema.type === 'boolean') return 'true';
  if (schema.format === 'uuid') return randomUUID();
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern);
    return [`0x${'a'.repeat(40)}`, PROJECT, EARLY].find((v) => pattern.test(v));
  }
  return parameter.in === 'path' ? PROJECT : EARLY;
}

let h: Harness;
let key: string;
let base: string;
let operations: Operation[];

beforeAll(async () => {
  h = await createHarness();
  key = await h.key('reader', ['allow', 'link']);
  await appendSightings(h.stores.log, { first: 0, count: 3, prefix: 'lg' });
  await h.stores.catchUp();
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  const document = (await (await fetch(`${base}/v1/openapi.json`)).json()) as {
    servers?: { url: string }[];
    paths: Record<string, Record<string, { operationId?: string; parameters?: Parameter[] }>>;
  };
  const prefix = new URL(document.servers?.[0]?.url ?? '/v1', 'http://x').pathname.replace(/\/$/, '');
  operations = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([, op]) => typeof op === 'object' && op.operationId !== undefined)
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path: `${prefix}${path}`,
        parameters: (op.parameters ?? []).filter((p) => p.in !== 'header'),
      })),
  );
});
afterAll(() => h.close());

/** The request with `values` in its path and query. */
function urlOf(op: Operation, values: Map<string, string>): string {
  let path = op.path;
  const query = new URLSearchParams();
  for (const p of op.parameters) {
    const value = values.get(`${p.in}:${p.name}`);
    if (value === undefined) continue;
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(value));
    else query.set(p.name, value);
  }
  const search = query.toString();
  return search === '' ? path : `${path}?${search}`;
}

/** Sends it; a refusal must be a small envelope repeating at most 100 characters of `sent`. */
async function check(method: string, url: string, sent: string): Promise<number> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(method === 'POST' ? { body: '{}' } : {}),
  });
  if (res.status < 400) {
    await res.body?.cancel();
    return res.status;
  }
  const body = await res.text();
  const where = `${method} ${url.slice(0, 120)}… → ${res.status}`;
  assert.notEqual(res.status, 500, where);
  assert.ok(Buffer.byteLength(body) < 1024, `${where}: ${Buffer.byteLength(body)} bytes`);
  const parsed = JSON.parse(body) as { error: { code: unknown; message: unknown } };
  assert.deepEqual(Object.keys(parsed), ['error'], where);
  assert.deepEqual(Object.keys(parsed.error), ['code', 'message'], where);
  assert.equal(typeof parsed.error.message, 'string', where);
  if (sent.length > 100)
    assert.ok(!body.includes(sent.slice(0, 101)), `${where}: more than 100 characters of the input repeated: ${body}`);
  return res.status;
}

it('a long value in any query parameter or path segment is refused in a small envelope repeating at most 100 characters', async () => {
  const tested = new Set<string>();
  for (const op of operations) {
    const required = new Map<string, string>(
      op.parameters.filter((p) => p.required).map((p) => [`${p.in}:${p.name}`, fillerOf(p) ?? 'x']),
    );
    for (const parameter of op.parameters) {
      const id = `${parameter.in}:${parameter.name}`;
      tested.add(`${op.method} ${op.path} ${id}`);
      const lengths = [
        LONG,
        ...(parameter.schema.maxLength && parameter.schema.maxLength < LONG ? [parameter.schema.maxLength] : []),
      ];
      // Alone with the required ones, then beside each other parameter in turn (a handle with asOf, …).
      const companions = [undefined, ...op.parameters.filter((p) => p !== parameter && !p.required)];
      for (const value of lengths.flatMap(longValues))
        for (const companion of companions) {
          const values = new Map(required);
          if (companion) values.set(`${companion.in}:${companion.name}`, fillerOf(companion) ?? 'x');
          values.set(id, value);
          await check(op.method, urlOf(op, values), value);
        }
    }
    // A long extra segment after the operation's path.
    for (const value of longValues(LONG))
      await check(op.method, `${urlOf(op, required)}/${encodeURIComponent(value)}`, value);
  }
  // Every parameter the document lists was sent long; the count guards against an empty document.
  assert.ok(tested.size >= 20, `${tested.size} parameters`);
});
