import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { tools } from '../../mcp/tools.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { makeCall, recordCall } from '../support/calls-fixtures.ts';
import { inspector, inspectorCall, inspectorToolNames, seedBoard } from './support.ts';

const IMPLEMENTED = tools.map((tool) => tool.name).sort();

describe('MCP Inspector CLI against a running server', () => {
  let h: Harness;
  let url: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ now: () => new Date('2026-11-20T08:00:00.000Z') });
    key = await h.key('inspector', ['allow']);
    await seedBoard(h);
    for (let n = 0; n < 3; n++)
      await recordCall(h, makeCall(n, { createdAt: new Date(Date.UTC(2026, 10, 1, n)).toISOString(), tokens: 1 }));
    await h.stores.catchUp();
    url = `${await h.app.listen({ host: '127.0.0.1', port: 0 })}/mcp`;
  });
  afterAll(() => h.close());

  it('lists the tools and calls get_project, sync_projects and list_calltracker_calls with --header "Authorization: Bearer KEY", as REST answers', async () => {
    assert.deepEqual(await inspectorToolNames(url, key), IMPLEMENTED);
    const call = (tool: string, args: string[]) => inspectorCall(url, key, tool, args);
    assert.deepEqual(await call('get_project', ['handle=h4']), (await h.get('/v1/projects/h4', key)).json());
    const page = await call('sync_projects', ['limit=3', 'view=full']);
    const rest = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=3', key)).json();
    assert.deepEqual(page, { ...rest, readAt: page.readAt });
    const calls = await call('list_calltracker_calls', ['limit=2']);
    const restCalls = (await h.get('/v1/calltracker/calls?limit=2', key)).json();
    assert.equal(restCalls.calls.length, 2);
    assert.deepEqual(calls, { ...restCalls, readAt: calls.readAt });
  });

  it('fails without the key', async () => {
    const refused = await inspector(url, null, ['--method', 'tools/list']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stdout + refused.stderr, /"code":"unauthorized"/);
  });
});
