import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { z } from 'zod';
import { camelCase, toolInputFrom } from '../../mcp/tools.ts';
import { protectionOf } from '../../mcp/plugin.ts';
import { tools } from '../../mcp/tools.ts';
import { projectsQuerySchema } from '../../service/requests/projects.ts';
import { createHarness } from '../support/harness.ts';

describe('tool inputs derived from REST request schemas', () => {
  it('renames snake_case parameters to camelCase and keeps their rules and descriptions', () => {
    assert.equal(camelCase('has_dossier'), 'hasDossier');
    assert.equal(camelCase('page'), 'page');
    assert.equal(camelCase('a_b_c2_d'), 'aBC2D');
    const input = toolInputFrom({ query: projectsQuerySchema });
    assert.deepEqual(Object.keys(input.schema.shape), ['page', 'since', 'cursor', 'limit', 'hasDossier', 'wait']);
    assert.equal(input.schema.shape.hasDossier, projectsQuerySchema.shape.has_dossier);
    assert.equal(
      input.schema.shape.hasDossier!.description,
      'Only projects with (true) or without (false) a research dossier.',
    );
    assert.ok(
      !input.schema.safeParse({ has_dossier: true }).success,
      'REST spellings are unknown parameters on the tool',
    );
    assert.ok(!input.schema.safeParse({ limit: 101 }).success);
    assert.ok(input.schema.safeParse({ hasDossier: true, limit: 100 }).success);
  });

  it('maps tool arguments back to their REST parts and names', () => {
    const input = toolInputFrom({
      params: z.object({ handle: z.string() }).strict(),
      query: z.object({ include_all: z.boolean().optional() }).strict(),
      body: z.object({ the_text: z.string() }).strict(),
    });
    assert.deepEqual(input.toRest({ handle: 'h', includeAll: true, theText: 'x' }), {
      params: { handle: 'h' },
      query: { include_all: true },
      body: { the_text: 'x' },
    });
    assert.deepEqual(input.toRest({ handle: 'h', unknown: 1, includeAll: undefined }), {
      params: { handle: 'h' },
      query: {},
      body: {},
    });
    // Only the arguments' own names: one inherited from a prototype is not an argument.
    const inherited = Object.assign(Object.create({ includeAll: true }) as Record<string, unknown>, { handle: 'h' });
    assert.deepEqual(input.toRest(inherited), { params: { handle: 'h' }, query: {}, body: {} });
  });

  it('refuses two parts declaring the same parameter name', () => {
    assert.throws(
      () =>
        toolInputFrom({
          params: z.object({ has_x: z.string() }).strict(),
          query: z.object({ hasX: z.string() }).strict(),
        }),
      /parameter 'hasX' appears twice \(params and query\)/,
    );
  });
});

describe('budget class of an MCP request', () => {
  it('is the class of the tool called (a call record read as get_calltracker_call), basic for anything else', async () => {
    const h = await createHarness();
    try {
      const call = (name: string, args: unknown) => ({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, arguments: args },
      });
      const cases: [unknown, string][] = [
        [{ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, 'basic'],
        [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'basic'],
        [call('list_projects', {}), 'basic'],
        [call('get_project', { handle: 'x' }), 'basic'],
        [call('get_project', { handle: 'x', include: 'context' }), 'protected'],
        [call('get_project', 'not an object'), 'basic'],
        [call('researcher_answers', { handle: 'x' }), 'protected'],
        [call('ask_researcher', { handle: 'x' }), 'protected'],
        [call('get_thesis_feed', {}), 'protected'],
        [call('no_such_tool', {}), 'basic'],
        [[call('list_projects', {}), call('ask_researcher', { handle: 'x' })], 'basic'],
        [{ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'pulseboard://calls/x' } }, 'protected'],
        [{ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'pulseboard://projects/x' } }, 'basic'],
        [null, 'basic'],
        ['text', 'basic'],
      ];
      for (const [body, expected] of cases)
        assert.equal(protectionOf(h.services, tools, body), expected, JSON.stringify(body));
    } finally {
      await h.close();
    }
  });
});

describe('the size of mcp/', () => {
  it('is at most 1,000 lines: the SDK does the protocol, what is ours says why in a line or two (issue 58)', () => {
    const dir = join(import.meta.dirname, '..', '..', 'mcp');
    const lines = readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .map((name) => readFileSync(join(dir, name), 'utf8').split('\n').length - 1);
    assert.ok(lines.reduce((a, b) => a + b, 0) <= 1000, `${lines.reduce((a, b) => a + b, 0)} lines`);
  });
});
