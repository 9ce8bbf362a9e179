import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { toolListing } from '../../mcp/listing.ts';
import { tools } from '../../mcp/tools.ts';
import { errorSchema, askReceiptSchema } from '../../readmodels/schemas.ts';
import { issueKey, revokeKey, changeOwner } from '../../service/access.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { card, makeCall, publishCard, recordCall } from '../support/calls-fixtures.ts';
import { connectClient, postRpc, recordingGate, rpcMessage, seedBoard, toolCall } from './support.ts';

const NOW = new Date('2026-11-20T08:00:00.000Z');

/** Exactly the twelve tools the API guide lists. */
const IMPLEMENTED = [
  'ask_researcher',
  'diff_projects',
  'get_calltracker_call',
  'get_project',
  'get_pulse',
  'get_thesis_feed',
  'list_calltracker_calls',
  'list_projects',
  'request_thesis_feed',
  'researcher_answers',
  'search_projects',
  'sync_projects',
];

describe('MCP at /mcp with the official SDK client', () => {
  let h: Harness;
  let base: string;
  let alice: string; // allowlisted
  let bob: string; // not allowlisted
  let client: Client;
  const gate = recordingGate();

  beforeAll(async () => {
    h = await createHarness({ now: () => NOW, gate });
    alice = await h.key('alice', ['allow']);
    bob = await h.key('bob');
    await seedBoard(h);
    for (let n = 0; n < 5; n++) {
      await recordCall(h, makeCall(n, { createdAt: new Date(Date.UTC(2026, 10, 1, n)).toISOString(), tokens: 2 }));
    }
    await publishCard(h, card('launches', 1), '2026-11-19T08:00:00.000Z');
    await h.stores.catchUp();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    client = await connectClient(base, alice);
  });
  afterAll(async () => {
    await client.close();
    await h.close();
  });

  /** Calls a tool and the REST twin; asserts the tool's structured content is the REST body. */
  async function sameAsRest(tool: string, args: Record<string, unknown>, url: string, key = alice) {
    const [result, rest] = await Promise.all([client.callTool({ name: tool, arguments: args }), h.get(url, key)]);
    assert.deepEqual(result.structuredContent, rest.json(), `${tool} ${JSON.stringify(args)} vs ${url}`);
    assert.equal(JSON.stringify(result.structuredContent), rest.body);
    assert.deepEqual(result.content, [{ type: 'text', text: rest.body }]);
    assert.equal(result.isError ?? false, rest.status !== 200);
    return { result, rest };
  }

  it('lists exactly the implemented tools, with camelCase inputs derived from the REST parameters', async () => {
    const { tools: listed } = await client.listTools();
    assert.deepEqual(listed.map((t) => t.name).sort(), IMPLEMENTED);
    for (const t of listed) {
      const own = tools.find((x) => x.name === t.name)!;
      // The listed input schema is the tool's own zod schema (its JSON Schema, as listing.ts writes it).
      assert.deepEqual(t.inputSchema, toolListing(own).inputSchema, `${t.name} input schema`);
      assert.deepEqual(
        Object.keys(t.inputSchema.properties ?? {}),
        Object.keys(own.input.schema.shape),
        `${t.name} input properties`,
      );
      assert.equal(t.inputSchema.additionalProperties, false);
      for (const name of Object.keys(t.inputSchema.properties ?? {}))
        assert.match(name, /^[a-z][a-zA-Z]*$/, `${t.name}: ${name} is camelCase`);
      assert.ok(t.description && t.description.length > 80, `${t.name} has a description an agent can act on`);
      assert.equal(t.outputSchema?.type, 'object');
      assert.equal(t.annotations?.readOnlyHint, !own.writes);
    }
    const readOnly = listed
      .filter((t) => t.annotations?.readOnlyHint)
      .map((t) => t.name)
      .sort();
    assert.deepEqual(
      readOnly,
      IMPLEMENTED.filter((name) => name !== 'ask_researcher' && name !== 'request_thesis_feed'),
    );
    // Descriptions say how to continue a sync and what since means.
    const sync = listed.find((t) => t.name === 'sync_projects')!;
    assert.match(sync.description!, /cursor/);
    assert.match(sync.description!, /not materially changed/);
    assert.match(sync.description!, /30 per page \(limit: 1 to 100\)/);
    assert.match(sync.description!, /With no arguments, from the beginning of the archive/);
  });

  it('list_projects returns the REST board page byte for byte', async () => {
    await sameAsRest('list_projects', { view: 'full' }, '/v1/projects');
    await sameAsRest('list_projects', { page: 2, view: 'full' }, '/v1/projects?page=2');
    const { result } = await sameAsRest(
      'list_projects',
      { page: 1, hasDossier: true, view: 'full' },
      '/v1/projects?page=1&has_dossier=true',
    );
    assert.equal((result.structuredContent as any).total, 20);
    await sameAsRest('list_projects', { hasDossier: false, view: 'full' }, '/v1/projects?has_dossier=false');
  });

  it('sync_projects returns the REST delta pages, and its cursor continues on either surface', async () => {
    const first = await sameAsRest(
      'sync_projects',
      { since: '2026-01-01T00:00:00Z', limit: 25, view: 'full' },
      '/v1/projects?since=2026-01-01T00:00:00Z&limit=25',
    );
    const page = first.result.structuredContent as any;
    assert.equal(page.projects.length, 25);
    assert.equal(page.hasMore, true);
    const second = await sameAsRest(
      'sync_projects',
      { cursor: page.cursor, limit: 25, view: 'full' },
      `/v1/projects?cursor=${page.cursor}&limit=25`,
    );
    assert.notEqual((second.result.structuredContent as any).projects[0].id, page.projects[0].id);
    // At its defaults the tool pages by 30 (REST by 50): the same rows as REST's page of 30.
    await sameAsRest(
      'sync_projects',
      { since: '2026-01-01T00:00:00Z', hasDossier: true, view: 'full' },
      '/v1/projects?since=2026-01-01T00:00:00Z&has_dossier=true&limit=30',
    );
  });

  it('get_project returns the REST project read, with and without context', async () => {
    await sameAsRest('get_project', { handle: 'h1' }, '/v1/projects/h1');
    await sameAsRest('get_project', { handle: 'p001' }, '/v1/projects/p001');
    // As-of reads (the history model, the point named in the answer), and not_found before the archive had the project.
    const now = new Date().toISOString();
    const { rest } = await sameAsRest('get_project', { handle: 'p001', asOf: now }, `/v1/projects/p001?asOf=${now}`);
    assert.equal(typeof rest.json().asOf.cursor, 'string');
    const { rest: before } = await sameAsRest(
      'get_project',
      { handle: 'p001', asOf: '2000-01-01T00:00:00Z' },
      '/v1/projects/p001?asOf=2000-01-01T00:00:00Z',
    );
    assert.equal(before.status, 404);
    const { result } = await sameAsRest(
      'get_project',
      { handle: '@H1', include: 'context' },
      '/v1/projects/@H1?include=context',
    );
    const context = (result.structuredContent as any).context;
    assert.deepEqual(context.votes, { up: 1, down: 0 });
    assert.deepEqual(context.voters.up, [{ name: 'Uma', avatar: null }]);
    assert.equal(context.research.state, 'researching');
    assert.equal(context.freshness.readAt, NOW.toISOString());
  });

  it('get_project follows a change of the project at once, read again and again on both surfaces', async () => {
    for (let round = 0; round < 3; round++) await sameAsRest('get_project', { handle: 'p002' }, '/v1/projects/p002');
    await h.append('project.sighted', 's-p002-renamed', 'project-p002', {
      projectId: 'p002',
      at: '2026-11-20T07:00:00.000Z',
      handle: 'h2',
      fol: 20,
      name: 'Renamed',
    });
    await h.stores.catchUp();
    const { result } = await sameAsRest('get_project', { handle: 'p002' }, '/v1/projects/p002');
    assert.equal((result.structuredContent as any).project.name, 'Renamed');
  });

  it('researcher_answers returns the REST ask list', async () => {
    const { result } = await sameAsRest('researcher_answers', { handle: 'h1' }, '/v1/projects/h1/ask');
    assert.deepEqual(
      (result.structuredContent as any).asks.map((a: any) => a.id),
      ['desk-1'],
    );
  });

  it('search, pulse and call-record tools return their REST twins byte for byte', async () => {
    await sameAsRest('search_projects', { q: 'h3' }, '/v1/search?q=h3');
    await sameAsRest('search_projects', { q: 'no-such-thing.example' }, '/v1/search?q=no-such-thing.example');
    await sameAsRest('get_pulse', {}, '/v1/pulse');
    await sameAsRest('get_pulse', { beat: 'launches' }, '/v1/pulse/launches');
    await sameAsRest('get_pulse', { beat: 'nope' }, '/v1/pulse/nope');
    const first = await sameAsRest('list_calltracker_calls', { limit: 2 }, '/v1/calltracker/calls?limit=2');
    const next = first.rest.json().next as string;
    assert.equal(first.rest.json().calls.length, 2);
    await sameAsRest(
      'list_calltracker_calls',
      { limit: 2, cursor: next },
      `/v1/calltracker/calls?limit=2&cursor=${next}`,
    );
    const id = first.rest.json().calls[0].id as string;
    await sameAsRest('get_calltracker_call', { id }, `/v1/calltracker/calls/${id}`);
    await sameAsRest('get_calltracker_call', { id: 'not-a-uuid' }, '/v1/calltracker/calls/not-a-uuid');
  });

  it('reports failures as tool errors carrying the same envelope REST sends', async () => {
    await sameAsRest('get_project', { handle: 'nobody' }, '/v1/projects/nobody');
    await sameAsRest('list_projects', { page: 0 }, '/v1/projects?page=0');
    await sameAsRest('sync_projects', { cursor: 'not-a-cursor' }, '/v1/projects?cursor=not-a-cursor');
    await sameAsRest('sync_projects', { since: 'yesterday' }, '/v1/projects?since=yesterday');
    await sameAsRest('get_project', { handle: 'h1', include: 'everything' }, '/v1/projects/h1?include=everything');
    await sameAsRest('researcher_answers', { handle: 'nobody' }, '/v1/projects/nobody/ask');
    await sameAsRest(
      'get_thesis_feed',
      { contract: `0x${'a'.repeat(40)}` },
      `/v1/thesisfeed/theses?contract=0x${'a'.repeat(40)}`,
    );

    // Parameter names in messages are the tool's own.
    const renamed = await client.callTool({ name: 'list_projects', arguments: { hasDossier: 'maybe' } });
    assert.equal(renamed.isError, true);
    assert.deepEqual(renamed.structuredContent, {
      error: { code: 'bad_request', message: "parameter 'hasDossier' must be true or false" },
    });

    const cases: [string, Record<string, unknown>, string, string][] = [
      [
        'sync_projects',
        { since: 'now', cursor: 'x' },
        'bad_request',
        "send either 'since' (to start) or 'cursor' (to continue), not both",
      ],
      ['list_projects', { since: '2026-01-01T00:00:00Z' }, 'bad_request', "unknown parameter 'since'"],
      [
        'get_project',
        {},
        'bad_request',
        "parameter 'handle' is invalid: Invalid input: expected string, received undefined",
      ],
      ['get_project', { handle: 'h1', has_dossier: true }, 'bad_request', "unknown parameter 'has_dossier'"],
      [
        'request_thesis_feed',
        { contract: `0x${'a'.repeat(40)}` },
        'forbidden',
        'The thesis feed is open to linked allowlist members only; this key owner is not one.',
      ],
    ];
    for (const [name, args, code, message] of cases) {
      const result = await client.callTool({ name, arguments: args });
      assert.equal(result.isError, true, name);
      assert.deepEqual(result.structuredContent, { error: { code, message } }, `${name} ${JSON.stringify(args)}`);
      assert.deepEqual(result.content, [{ type: 'text', text: JSON.stringify({ error: { code, message } }) }]);
    }
  });

  it('ask_researcher appends exactly one event; researcher_answers and GET …/ask then show it', async () => {
    const head = await h.stores.log.headPosition();
    const result = await client.callTool({
      name: 'ask_researcher',
      arguments: { handle: 'h2', question: 'Is the team public?' },
    });
    assert.equal(result.isError ?? false, false);
    const receipt = askReceiptSchema.parse(result.structuredContent);
    assert.deepEqual({ ...receipt, id: 'x' }, { id: 'x', projectId: 'p002', kind: 'question', state: 'queued' });
    assert.deepEqual(result.content, [{ type: 'text', text: JSON.stringify(receipt) }]);

    const appended = await h.stores.log.readAll({ afterPosition: head, limit: 10 });
    assert.equal(appended.length, 1);
    assert.equal(appended[0]!.type, 'ask.asked');
    assert.equal(appended[0]!.stream, 'project-p002');
    assert.deepEqual(appended[0]!.data, {
      projectId: 'p002',
      askId: receipt.id,
      question: 'Is the team public?',
      owner: 'alice',
      at: NOW.toISOString(),
    });

    const research = await client.callTool({ name: 'ask_researcher', arguments: { handle: 'p002' } });
    const researchReceipt = askReceiptSchema.parse(research.structuredContent);
    assert.equal(researchReceipt.kind, 'research');
    assert.equal((await h.stores.log.readAll({ afterPosition: head, limit: 10 })).length, 2);

    await h.stores.catchUp();
    const { result: answers } = await sameAsRest('researcher_answers', { handle: 'h2' }, '/v1/projects/h2/ask');
    const asks = (answers.structuredContent as any).asks;
    assert.deepEqual(asks.map((a: any) => a.id).sort(), [receipt.id, researchReceipt.id].sort());
    assert.deepEqual(
      asks.find((a: any) => a.id === receipt.id),
      {
        id: receipt.id,
        question: 'Is the team public?',
        askedAt: NOW.toISOString(),
        status: 'queued',
        answer: null,
        answeredAt: null,
      },
    );
    assert.equal(asks.find((a: any) => a.id === researchReceipt.id).question, null);
  });

  it('forbids ask_researcher and researcher_answers to a key owner who is not allowlisted', async () => {
    const bobClient = await connectClient(base, bob);
    try {
      const head = await h.stores.log.headPosition();
      const asked = await bobClient.callTool({
        name: 'ask_researcher',
        arguments: { handle: 'h2', question: 'Let me in?' },
      });
      assert.equal(asked.isError, true);
      assert.equal(errorSchema.parse(asked.structuredContent).error.code, 'forbidden');
      assert.equal(await h.stores.log.headPosition(), head);
      const answers = await bobClient.callTool({ name: 'researcher_answers', arguments: { handle: 'h2' } });
      const rest = await h.get('/v1/projects/h2/ask', bob);
      assert.equal(rest.status, 403);
      assert.deepEqual(answers.structuredContent, rest.json());
      // Re-checked per call: allowlisting takes effect on the very next call.
      await changeOwner(h.stores, 'bob', 'allow');
      const allowed = await bobClient.callTool({ name: 'researcher_answers', arguments: { handle: 'h2' } });
      assert.equal(allowed.isError ?? false, false);
      await changeOwner(h.stores, 'bob', 'deny');
    } finally {
      await bobClient.close();
    }
  });

  it('answers a missing or bad key with exactly the REST 401', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    for (const key of [null, 'pbk_wrong', `pbk_${'A'.repeat(43)}`]) {
      const mcp = await postRpc(base, key, initialize);
      const rest = await fetch(`${base}/v1/projects`, {
        headers: key === null ? {} : { authorization: `Bearer ${key}` },
      });
      assert.equal(mcp.status, 401);
      assert.equal(rest.status, 401);
      assert.equal(await mcp.text(), await rest.text());
      for (const header of ['content-type', 'www-authenticate', 'cache-control', 'retry-after']) {
        assert.equal(mcp.headers.get(header), rest.headers.get(header), header);
      }
    }
    await assert.rejects(
      connectClient(base, 'pbk_wrong'),
      (error: unknown) => error instanceof StreamableHTTPError && error.code === 401,
    );
  });

  it('a revoked key fails on the very next request on both surfaces', async () => {
    const issued = await issueKey(h.stores, 'dora');
    const dora = await connectClient(base, issued.key);
    try {
      assert.equal((await dora.callTool({ name: 'get_project', arguments: { handle: 'h1' } })).isError ?? false, false);
      assert.equal((await h.get('/v1/projects/h1', issued.key)).status, 200);
      await revokeKey(h.stores, issued.keyId);
      await assert.rejects(
        dora.callTool({ name: 'get_project', arguments: { handle: 'h1' } }),
        (error: unknown) =>
          error instanceof StreamableHTTPError && error.code === 401 && /"unauthorized"/.test(error.message),
      );
      assert.equal((await h.get('/v1/projects/h1', issued.key)).status, 401);
    } finally {
      await dora.close().catch(() => undefined);
    }
  });

  it('counts every POST once against the key, with the protection class of the tool called', async () => {
    const erin = await issueKey(h.stores, 'erin');
    await changeOwner(h.stores, 'erin', 'allow');
    const erinClient = await connectClient(base, erin.key);
    try {
      await erinClient.callTool({ name: 'get_project', arguments: { handle: 'h1' } });
      await erinClient.callTool({ name: 'get_project', arguments: { handle: 'h1', include: 'context' } });
      await erinClient.callTool({ name: 'list_projects', arguments: {} });
      await erinClient.callTool({ name: 'researcher_answers', arguments: { handle: 'h1' } });
      await erinClient.callTool({ name: 'get_thesis_feed', arguments: { contract: `0x${'b'.repeat(40)}` } });
      const counted = gate.counted.filter((c) => c.keyId === erin.keyId).map((c) => `${c.budget}:${c.protection}`);
      // initialize and notifications/initialized on the protocol budget, then the five calls on the requests budget.
      assert.deepEqual(counted, [
        'protocol:basic',
        'protocol:basic',
        'requests:basic',
        'requests:protected',
        'requests:basic',
        'requests:protected',
        'requests:protected',
      ]);
    } finally {
      await erinClient.close();
    }
  });

  it('answers a refused tool call as a tool error saying how long to wait, with the rate headers on the HTTP response', async () => {
    try {
      gate.mode = 'protection_down';
      const down = await postRpc(base, alice, toolCall('get_project', { handle: 'h1', include: 'context' }));
      assert.equal(down.status, 200);
      assert.equal(down.headers.get('retry-after'), '60');
      const body = await rpcMessage(down);
      assert.equal(body.result.isError, true);
      assert.deepEqual(body.result.structuredContent, {
        error: { code: 'unavailable', message: 'Rate protection is unavailable; wait 60 seconds and retry.' },
      });
      // Basic reads go on while protection is down.
      const plain = await client.callTool({ name: 'get_project', arguments: { handle: 'h1' } });
      assert.equal(plain.isError ?? false, false);
      const viaClient = await client.callTool({
        name: 'ask_researcher',
        arguments: { handle: 'h1', question: 'Now?' },
      });
      assert.equal((viaClient.structuredContent as any).error.code, 'unavailable');

      gate.mode = 'rate_limited';
      const limited = await postRpc(base, alice, toolCall('list_projects', {}));
      assert.equal(limited.status, 200);
      assert.equal(limited.headers.get('retry-after'), '42');
      assert.equal(limited.headers.get('ratelimit-remaining'), '7');
      const limitedBody = await rpcMessage(limited);
      assert.deepEqual(limitedBody.result.structuredContent, {
        error: {
          code: 'rate_limited',
          message: 'Rate limit exceeded; retry after the Retry-After interval. Wait 42 seconds before calling again.',
        },
      });
      // Not a tool call: the HTTP error REST would give.
      const list = await postRpc(base, alice, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
      assert.equal(list.status, 429);
      assert.equal(list.headers.get('retry-after'), '42');
      assert.deepEqual(await list.json(), {
        error: { code: 'rate_limited', message: 'Rate limit exceeded; retry after the Retry-After interval.' },
      });
    } finally {
      gate.mode = 'open';
    }
  });

  it('passes the gate headers on and answers a stateless tools/call without a session', async () => {
    const res = await postRpc(base, alice, toolCall('get_project', { handle: 'h3' }, 7));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit-limit'), '60');
    assert.match(res.headers.get('cache-control') ?? '', /^private, no-store/);
    assert.equal(res.headers.get('mcp-session-id'), null);
    const body = await rpcMessage(res);
    assert.equal(body.id, 7);
    assert.deepEqual(body.result.structuredContent, (await h.get('/v1/projects/h3', alice)).json());
  });

  it('answers GET and DELETE with 405 in the error envelope, and a malformed body with the 400 REST gives', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${base}/mcp`, { method, headers: { authorization: `Bearer ${alice}` } });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      const body = errorSchema.parse(await res.json());
      assert.equal(body.error.code, 'bad_request');
      assert.match(body.error.message, /POST/);
    }
    const malformed = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${alice}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc": ',
    });
    assert.equal(malformed.status, 400);
    assert.deepEqual(await malformed.json(), {
      error: { code: 'bad_request', message: 'request body is not valid JSON' },
    });
  });

  it('answers get_project and list_projects with the REST body byte for byte as text, characters past Latin-1 included', async () => {
    await h.append('project.sighted', 's-p004-renamed', 'project-p004', {
      projectId: 'p004',
      at: '2026-11-20T07:00:00.000Z',
      handle: 'h4',
      fol: 40,
      name: 'Café — ✓ 東京 🚀',
    });
    await h.stores.catchUp();
    const alone = async (message: unknown) => {
      const res = await postRpc(base, alice, message);
      assert.equal(res.status, 200);
      return rpcMessage(res);
    };
    // Read three times: the body cache keeps the project from its second read; every answer is the same.
    const reads = [];
    for (let i = 0; i < 3; i++) reads.push(await alone(toolCall('get_project', { handle: 'p004' }, 1)));
    const rest = await h.get('/v1/projects/p004', alice);
    for (const read of reads)
      assert.deepEqual(read, {
        result: { content: [{ type: 'text', text: rest.body }], structuredContent: rest.json() },
        jsonrpc: '2.0',
        id: 1,
      });
    assert.equal(reads[0].result.structuredContent.project.name, 'Café — ✓ 東京 🚀');

    let named = 0;
    for (const page of [1, 2]) {
      const answer = await alone(toolCall('list_projects', { page, view: 'full' }, page));
      const board = await h.get(`/v1/projects?page=${page}`, alice);
      assert.deepEqual(answer.result.structuredContent, board.json());
      assert.equal(
        answer.result.content[0].text,
        board.body.replace(/"readAt":"[^"]+"/, `"readAt":"${answer.result.structuredContent.readAt}"`),
      );
      if (board.body.includes('Café — ✓ 東京 🚀')) named += 1;
    }
    assert.equal(named, 1, 'the project named past Latin-1 is on one of the pages');
  });
});
