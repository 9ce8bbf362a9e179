import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { validateResponse } from '../support/openapi-validator.ts';

/** The code each status carries (docs/api-guide.md, "Errors"). */
const CODE_OF: Record<string, string> = {
  '400': 'bad_request',
  '401': 'unauthorized',
  '403': 'forbidden',
  '404': 'not_found',
  '409': 'conflict',
  '429': 'rate_limited',
  '500': 'unavailable',
  '503': 'unavailable',
};

describe('OpenAPI error examples', () => {
  let h: Harness;
  let doc: any;
  beforeAll(async () => {
    h = await createHarness();
    doc = (await h.get('/v1/openapi.json')).json();
  });
  afterAll(() => h.close());

  it("shows each error status with its own code (not the enum's first value), valid against its schema", () => {
    let count = 0;
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (!/^[45]/.test(status)) continue;
          const examples = Object.values<any>(response.content['application/json'].examples ?? {});
          assert.equal(examples.length, 1, `${op.operationId} ${status} has an example`);
          assert.equal(examples[0].value.error.code, CODE_OF[status], `${op.operationId} ${status}`);
          const checked = validateResponse(doc, method.toUpperCase(), `/v1${path}`, Number(status), examples[0].value);
          assert.ok(checked.ok, `${op.operationId} ${status}: ${JSON.stringify(checked)}`);
          count += 1;
        }
      }
    }
    assert.ok(count > 30, `${count} error examples`);
  });
});
