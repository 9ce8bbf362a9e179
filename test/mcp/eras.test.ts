import assert from 'node:assert/strict';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { tools } from '../../mcp/tools.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { makeCall, recordCall } from '../support/calls-fixtures.ts';
import { connectClient, seedBoard } from './support.ts';

type Caller = {
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(params: {
    name: string;
    arguments: Record<string, unknown>;
  }): Promise<{ structuredContent?: unknown; content?: unknown; isError?: boolean }>;
  close(): Promise<void>;
};

/** A v2 client over Streamable HTTP with the key; `auto` probes with server/discover, `legacy` runs the 2025 handshake. */
async function connectV2(base: string, key: string, mode: 'auto' | 'legacy'): Promise<ClientV2> {
  const client = new ClientV2({ name: 'pulseboard-test', version: '2.0.0' }, { versionNegotiation: { mode } });
  await client.connect(
    new TransportV2(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  );
  return client;
}

/** The REST twin's body and the tool's result for the same read, with readAt (the time of each read) aligned. */
function sameRead(tool: unknown, rest: Record<string, unknown>): void {
  const result = tool as {
    structuredContent: Record<string, unknown>;
    content: { type: string; text: string }[];
    isError?: boolean;
  };
  assert.equal(result.isError ?? false, false);
  const aligned = 'readAt' in rest ? { ...rest, readAt: result.structuredContent.readAt } : rest;
  assert.deepEqual(result.structuredContent, aligned);
  assert.deepEqual(JSON.parse(result.content[0]!.text), result.structuredContent);
}

describe('both protocol eras, with the v2 client, the v1 client and raw requests', () => {
  let h: Harness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ now: () => new Date('2026-11-20T08:00:00.000Z') });
    key = await h.key('eras', ['allow']);
    await seedBoard(h);
    for (let n = 0; n < 3; n++)
      await recordCall(h, makeCall(n, { createdAt: new Date(Date.UTC(2026, 10, 1, n)).toISOString(), tokens: 1 }));
    await h.stores.catchUp();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  const clients: [string, string, () => Promise<Caller & { version(): string | undefined }>][] = [
    [
      'v2 client, versionNegotiation auto',
      '2026-07-28',
      async () => {
        const client = await connectV2(base, key, 'auto');
        return Object.assign(client, { version: () => client.getNegotiatedProtocolVersion() });
      },
    ],
    [
      'v2 client, 2025 handshake',
      '2025-11-25',
      async () => {
        const client = await connectV2(base, key, 'legacy');
        return Object.assign(client, { version: () => client.getNegotiatedProtocolVersion() });
      },
    ],
    [
      'v1 client (1.32)',
      '2025-11-25',
      async () => {
        const client = await connectClient(base, key);
        return Object.assign(client as unknown as Caller, {
          version: () => (client.transport as { protocolVersion?: string } | undefined)?.protocolVersion,
        });
      },
    ],
  ];

  for (const [name, version, connect] of clients) {
    it(`${name}: speaks ${version}, lists the tools in the table's order, and get_project, sync_projects and list_calltracker_calls equal REST`, async () => {
      const client = await connect();
      try {
        assert.equal(client.version(), version);
        const listed = await client.listTools();
        assert.deepEqual(
          listed.tools.map((t) => t.name),
          tools.map((t) => t.name),
        );

        sameRead(
          await client.callTool({ name: 'get_project', arguments: { handle: 'h4' } }),
          (await h.get('/v1/projects/h4', key)).json(),
        );
        const page = await client.callTool({ name: 'sync_projects', arguments: { limit: 3, view: 'full' } });
        sameRead(page, (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=3', key)).json());
        sameRead(
          await client.callTool({ name: 'list_calltracker_calls', arguments: { limit: 2 } }),
          (await h.get('/v1/calltracker/calls?limit=2', key)).json(),
        );
        // A refusal is a tool error in the envelope in every era.
        const missing = await client.callTool({ name: 'get_project', arguments: { handle: 'nobody' } });
        assert.equal(missing.isError, true);
        assert.equal((missing.structuredContent as { error: { code: string } }).error.code, 'not_found');
      } finally {
        await client.close();
      }
    });
  }

  it('2026-07-28: server/discover names the revision and the capabilities; list results carry ttlMs and cacheScope', async () => {
    const client = await connectV2(base, key, 'auto');
    try {
      const discovered = client.getDiscoverResult() as Record<string, any>;
      // The 2025 revisions are served through the initialize handshake, which discover does not list.
      assert.deepEqual(discovered.supportedVersions, ['2026-07-28']);
      assert.equal(discovered.ttlMs, 3_600_000);
      assert.deepEqual(discovered.capabilities.resources, { subscribe: true, listChanged: true });
      assert.equal(discovered.capabilities.tools.listChanged, false);
      const listed = (await client.listTools()) as Record<string, unknown>;
      assert.equal(listed.ttlMs, 3_600_000);
      assert.equal(listed.cacheScope, 'public');
      const read = (await client.readResource({ uri: 'pulseboard://projects/p004' })) as Record<string, unknown>;
      assert.equal(read.ttlMs, 0);
      assert.equal(read.cacheScope, 'private');
    } finally {
      await client.close();
    }
  });

  it('resources: the eight beats listed, three templates, contents equal to the twin tools, and completions', async () => {
    for (const mode of ['auto', 'legacy'] as const) {
      const client = await connectV2(base, key, mode);
      try {
        const listed = await client.listResources();
        assert.deepEqual(
          listed.resources.map((r) => r.uri),
          ['launches', 'funding', 'listings', 'security', 'onchain', 'social', 'infra', 'policy'].map(
            (b) => `pulseboard://pulse/${b}`,
          ),
        );
        const templates = await client.listResourceTemplates();
        assert.deepEqual(
          templates.resourceTemplates.map((t) => t.uriTemplate),
          ['pulseboard://projects/{id}', 'pulseboard://calls/{id}', 'pulseboard://pulse/{beat}'],
        );

        const text = async (uri: string) => {
          const read = await client.readResource({ uri });
          assert.equal(read.contents.length, 1);
          assert.equal(read.contents[0]!.uri, uri);
          assert.equal(read.contents[0]!.mimeType, 'application/json');
          return JSON.parse((read.contents[0] as { text: string }).text) as Record<string, unknown>;
        };
        const project = (await client.callTool({ name: 'get_project', arguments: { handle: 'p004' } }))
          .structuredContent as Record<string, unknown>;
        assert.deepEqual(await text('pulseboard://projects/p004'), project);
        const callId = (await h.get('/v1/calltracker/calls?limit=1', key)).json().calls[0].id as string;
        const call = (await client.callTool({ name: 'get_calltracker_call', arguments: { id: callId } }))
          .structuredContent as Record<string, unknown>;
        assert.deepEqual(await text(`pulseboard://calls/${callId}`), {
          ...call,
          readAt: (await text(`pulseboard://calls/${callId}`)).readAt,
        });
        const pulse = (await client.callTool({ name: 'get_pulse', arguments: { beat: 'funding' } }))
          .structuredContent as Record<string, unknown>;
        const pulseRead = await text('pulseboard://pulse/funding');
        assert.deepEqual(pulseRead, { ...pulse, readAt: pulseRead.readAt });
        await assert.rejects(
          client.readResource({ uri: 'pulseboard://projects/nobody' }),
          /nobody|not found|No project/i,
        );

        const beats = await client.complete({
          ref: { type: 'ref/resource', uri: 'pulseboard://pulse/{beat}' },
          argument: { name: 'beat', value: 's' },
        });
        assert.deepEqual(beats.completion.values, ['security', 'social']);
        const handles = await client.complete({
          ref: { type: 'ref/resource', uri: 'pulseboard://projects/{id}' },
          argument: { name: 'id', value: '@H1' },
        });
        // h1 and h10..h19: eleven handles by prefix, in order.
        assert.deepEqual(handles.completion.values, [
          'h1',
          'h10',
          'h11',
          'h12',
          'h13',
          'h14',
          'h15',
          'h16',
          'h17',
          'h18',
          'h19',
        ]);
        const many = await client.complete({
          ref: { type: 'ref/resource', uri: 'pulseboard://projects/{id}' },
          argument: { name: 'id', value: 'h' },
        });
        assert.equal(many.completion.values.length, 20, 'at most 20');
      } finally {
        await client.close();
      }
    }
  });
});

describe('2026-07-28 requests by hand: the Mcp-Method / Mcp-Name headers must match the body', () => {
  let h: Harness;
  let base: string;
  let key: string;
  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('headers');
    await seedBoard(h);
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const post = (headers: Record<string, string>) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_project', arguments: { handle: 'h1' }, _meta: META },
      }),
    });

  it('answers matching headers with the tool result as JSON, and refuses a mismatched name or method', async () => {
    const matching = await post({ 'mcp-method': 'tools/call', 'mcp-name': 'get_project' });
    assert.equal(matching.status, 200);
    assert.match(matching.headers.get('content-type') ?? '', /application\/json/);
    const body = (await matching.json()) as { result: { structuredContent: { project: { id: string } } } };
    assert.equal(body.result.structuredContent.project.id, 'p001');
    for (const headers of [
      { 'mcp-method': 'tools/call', 'mcp-name': 'list_projects' },
      { 'mcp-method': 'tools/list', 'mcp-name': 'get_project' },
    ]) {
      const refused = await post(headers);
      assert.equal(refused.status, 400, JSON.stringify(headers));
      const error = (await refused.json()) as { error: { code: number; message: string } };
      assert.ok(error.error.code < 0, JSON.stringify(error));
    }
  });
});
