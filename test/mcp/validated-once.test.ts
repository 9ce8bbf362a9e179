import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { toolFailure } from '../../mcp/results.ts';
import { tools, type Tool } from '../../mcp/tools.ts';
import { errors } from '../../service/errors.ts';
import { parseParams } from '../../service/requests/params.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { seedBoard, toolCall } from './support.ts';

/** Arguments each tool accepts, to which one or two wrong values are added. */
const VALID: Record<string, Record<string, unknown>> = {
  list_projects: {},
  sync_projects: {},
  get_project: { handle: 'h1' },
  search_projects: { q: 'alpha' },
};

/** Values that are wrong for most parameters: wrong types, out of range, malformed, too long. */
const WRONG: unknown[] = [{}, [], null, true, false, -1, 0, 1.5, 101, 1e9, '', ' ', 'x'.repeat(5000), 'yes', 'now', '2026-13-45', '2026-11-20T08:00:00', '-3', 'context2'];

/**
 * The tools that leave validation to the service (`validatedByService`) must refuse what their input
 * schema refuses, with the same message: for every parameter and wrong value, for every pair of
 * parameters both wrong, and for what is missing, the result is the input schema's refusal.
 */
describe('tool calls validated once, by the service', () => {
  let h: Harness;
  let key: string;
  const validated = tools.filter((tool) => tool.validatedByService);

  beforeAll(async () => {
    h = await createHarness({ now: () => new Date('2026-11-20T08:00:00.000Z') });
    key = await h.key('member');
    await seedBoard(h);
  });
  afterAll(async () => {
    await h.close();
  });

  async function call(tool: Tool, args: Record<string, unknown>): Promise<unknown> {
    const res = await h.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: toolCall(tool.name, args),
    });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { result: unknown }).result;
  }

  /** Calls the tool; where its input schema refuses `args`, the result must be that refusal. Says whether it did. */
  async function refusedAsTheSchemaRefuses(tool: Tool, args: Record<string, unknown>): Promise<boolean> {
    const expected = parseParams(tool.input.schema, args);
    const result = await call(tool, args);
    if (expected.ok) {
      const message = JSON.stringify(result);
      assert.ok(!/unknown parameter|parameter '[^']+' (must|is invalid)/.test(message), `${tool.name} ${JSON.stringify(args).slice(0, 80)}: ${message.slice(0, 300)}`);
      return false;
    }
    assert.deepEqual(result, toolFailure(errors.badRequest(tool.input.renameInMessage(expected.message))), `${tool.name} ${JSON.stringify(args).slice(0, 80)}`);
    return true;
  }

  it('covers the hot read tools', () => {
    assert.deepEqual(validated.map((tool) => tool.name).sort(), Object.keys(VALID).sort());
  });

  it('refuses every wrong value of every parameter as the input schema does', async () => {
    for (const tool of validated) {
      const names = Object.keys(tool.input.schema.shape);
      let refused = 0;
      for (const name of names) {
        for (const value of WRONG) if (await refusedAsTheSchemaRefuses(tool, { ...VALID[tool.name], [name]: value })) refused += 1;
      }
      // Every parameter has wrong values among them: the comparison above was made, not skipped.
      assert.ok(refused >= names.length * 3, `${tool.name}: only ${refused} refusals compared`);
    }
  });

  it('reports the first of two wrong parameters as the input schema does', async () => {
    for (const tool of validated) {
      const names = Object.keys(tool.input.schema.shape);
      for (const first of names) {
        for (const second of names) {
          if (first === second) continue;
          assert.ok(await refusedAsTheSchemaRefuses(tool, { ...VALID[tool.name], [first]: {}, [second]: [] }), `${tool.name}: ${first}, ${second}`);
        }
      }
    }
  });

  it('refuses a missing parameter and an unknown name as the input schema does', async () => {
    for (const tool of validated) {
      if (Object.keys(VALID[tool.name]!).length > 0) assert.ok(await refusedAsTheSchemaRefuses(tool, {}), tool.name);
      assert.ok(await refusedAsTheSchemaRefuses(tool, { ...VALID[tool.name], made_up: 1 }), tool.name);
      assert.ok(await refusedAsTheSchemaRefuses(tool, { made_up: {}, ...VALID[tool.name], also: 'x' }), tool.name);
    }
  });
});
