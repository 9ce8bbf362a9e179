/**
 * Issue 18, item 3: every property of every schema in the OpenAPI document has a description
 * (from readmodels/descriptions.ts or the request schemas' .describe()), every operation has a
 * realistic example response that its own schema accepts, and none of that reaches the MCP tool
 * listing, whose size is budgeted.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { postRpc } from '../mcp/support.ts';
import { validateResponse } from '../support/openapi-validator.ts';

type Json = Record<string, unknown>;

/** Every `properties` entry in a JSON tree, with its path. */
function properties(
  node: unknown,
  path: string,
  out: { path: string; schema: Json }[] = [],
): { path: string; schema: Json }[] {
  if (Array.isArray(node)) node.forEach((item, i) => properties(item, `${path}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && value && typeof value === 'object') {
        for (const [name, schema] of Object.entries(value)) {
          out.push({ path: `${path}/properties/${name}`, schema: schema as Json });
          properties(schema, `${path}/properties/${name}`, out);
        }
      } else properties(value, `${path}/${key}`, out);
    }
  }
  return out;
}

describe('OpenAPI descriptions and examples', () => {
  let h: Harness;
  let doc: any;
  beforeAll(async () => {
    h = await createHarness();
    doc = (await h.get('/v1/openapi.json')).json();
  });
  afterAll(() => h.close());

  it('describes every schema property', () => {
    const all = properties(doc, '#');
    assert.ok(all.length > 250, `found ${all.length} properties`);
    const bare = all
      .filter((p) => typeof p.schema.description !== 'string' || p.schema.description.length < 3)
      .map((p) => p.path);
    assert.deepEqual(bare, []);
  });

  it('describes every named schema and every parameter', () => {
    for (const [id, schema] of Object.entries<Json>(doc.components.schemas)) {
      if (schema.anyOf) continue; // a union of named schemas, each described
      assert.equal(typeof schema.description, 'string', id);
    }
    for (const methods of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(methods))
        for (const p of op.parameters) assert.equal(typeof p.description, 'string', `${op.operationId} ${p.name}`);
    }
  });
});

describe('OpenAPI examples', () => {
  let h: Harness;
  let doc: any;
  beforeAll(async () => {
    h = await createHarness();
    doc = (await h.get('/v1/openapi.json')).json();
  });
  afterAll(() => h.close());

  it('gives every operation an example for each success response, valid against its own schema', () => {
    let count = 0;
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (!status.startsWith('2')) continue;
          const stream = response.content['text/event-stream'];
          const examples = (stream ?? response.content['application/json']).examples as
            Record<string, { summary: string; value: unknown }> | undefined;
          assert.ok(examples && Object.keys(examples).length > 0, `${op.operationId} ${status} has an example`);
          for (const [name, example] of Object.entries(examples)) {
            assert.ok(example.summary.length > 0, `${op.operationId} ${name} summary`);
            if (stream) {
              // Each event's data is one document of the schema the stream names.
              const data = String(example.value)
                .split('\n')
                .filter((line) => line.startsWith('data: '));
              assert.ok(data.length > 0, `${op.operationId} ${name} has an event`);
              assert.equal(stream['x-event-data'].$ref, '#/components/schemas/Project');
              // Each event's data is a Project as a delta page carries it: checked inside such a page.
              const projects = data.map((line) => JSON.parse(line.slice(6)) as unknown);
              const page = { projects, cursor: 'c', hasMore: false, limit: 50, readAt: '2026-11-20T08:00:00.000Z' };
              const checked = validateResponse(doc, 'GET', '/v1/projects', 200, page);
              assert.ok(checked.ok, `${op.operationId} ${name} data: ${JSON.stringify(checked)}`);
              count += 1;
              continue;
            }
            const result = validateResponse(doc, method.toUpperCase(), `/v1${path}`, Number(status), example.value);
            assert.ok(result.ok, `${op.operationId} ${status} ${name}: ${JSON.stringify(result)}`);
            count += 1;
          }
        }
      }
    }
    assert.ok(count >= Object.keys(doc.paths).length, `${count} examples`);
  });
});

describe('the MCP tool listing', () => {
  it('carries neither the OpenAPI field descriptions nor the examples (tools/list has a size budget)', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('lister');
      const doc = (await h.get('/v1/openapi.json')).json();
      const address = await h.app.listen({ port: 0, host: '127.0.0.1' });
      const response = await postRpc(address, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
      assert.equal(response.status, 200);
      const listing = await response.text();
      assert.match(listing, /list_projects/);
      // The descriptions of the response fields, which readmodels/descriptions.ts gives only to OpenAPI.
      const descriptions = [...new Set(properties(doc.components, '#').map((p) => p.schema.description as string))];
      assert.ok(descriptions.length > 150, `${descriptions.length} descriptions`);
      const leaked = descriptions.filter((text) => listing.includes(JSON.stringify(text).slice(1, -1)));
      assert.deepEqual(leaked, []);
      assert.doesNotMatch(listing, /Tidal Swap|degen_dora/, 'no example values');
    } finally {
      await h.close();
    }
  });
});
