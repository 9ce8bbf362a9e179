import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Budget, GateResult as GateOutcome, Protection, RateGate as Gate } from '../../service/rate/gate.ts';
import { errors } from '../../service/errors.ts';
import type { Harness } from '../support/harness.ts';

/** An official SDK client over Streamable HTTP, carrying the key as the spec says. */
export async function connectClient(baseUrl: string, key: string | null): Promise<Client> {
  const client = new Client({ name: 'pulseboard-test', version: '1.0.0' });
  const headers: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } }));
  return client;
}

/** One JSON-RPC POST to /mcp with plain fetch, for tests that look at the HTTP response itself. */
export async function postRpc(baseUrl: string, key: string | null, body: unknown): Promise<Response> {
  return fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
    },
    body: JSON.stringify(body),
  });
}

/**
 * The JSON-RPC messages of a /mcp response: a JSON body, or the `data:` lines of an SSE stream
 * (the SDK answers a 2025-era request on a stream of one message).
 */
export async function rpcMessages(res: Response): Promise<any[]> {
  const text = await res.text();
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as unknown);
}

/** The one JSON-RPC message a /mcp response carries. */
export async function rpcMessage(res: Response): Promise<any> {
  const messages = await rpcMessages(res);
  if (messages.length !== 1) throw new Error(`expected one message, got ${messages.length}`);
  return messages[0];
}

export const toolCall = (name: string, args: Record<string, unknown>, id = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

export type GateMode = 'open' | 'protection_down' | 'rate_limited';

/**
 * A gate that records what it was asked to count and refuses on demand: `protection_down`
 * refuses protected requests with 503 (basic ones go on), `rate_limited` refuses all.
 */
export function recordingGate(): Gate & {
  mode: GateMode;
  counted: { keyId: string; protection: Protection; budget: Budget }[];
} {
  const headers = { 'ratelimit-limit': '60', 'ratelimit-remaining': '7', 'ratelimit-reset': '42' };
  const gate = {
    mode: 'open' as GateMode,
    counted: [] as { keyId: string; protection: Protection; budget: Budget }[],
    async check(keyId: string, protection: Protection, budget: Budget = 'requests'): Promise<GateOutcome> {
      gate.counted.push({ keyId, protection, budget });
      if (gate.mode === 'rate_limited') return { ok: false, error: errors.rateLimited(42), headers };
      if (gate.mode === 'protection_down' && protection === 'protected')
        return { ok: false, error: errors.rateProtectionDown(), headers: {} };
      return { ok: true, headers };
    },
  };
  return gate;
}

/** Board fixture: 60 projects (every third with a dossier), votes and a research state on p001. */
export async function seedBoard(h: Harness): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const id = `p${String(i).padStart(3, '0')}`;
    const at = new Date(Date.UTC(2026, 9, 1) + i * 3_600_000).toISOString();
    await h.append('project.sighted', `s-${id}`, `project-${id}`, {
      projectId: id,
      at,
      handle: `h${i}`,
      fol: i * 10,
      name: `Project ${i}`,
    });
    if (i % 3 === 0) {
      await h.append('dossier.written', `d-${id}`, `project-${id}`, {
        projectId: id,
        at,
        dossier: {
          name: `Project ${i}`,
          category: 'defi',
          description: 'A project.',
          stage: 'live',
          confidence: 'low',
          chains: ['base'],
          founders: [],
          backers: [],
          notable: [],
          token: null,
          links: { site: null, docs: null, github: null },
          unverified: [],
          onchain: null,
        },
      });
    }
  }
  await h.append('vote.cast', 'v1', 'project-p001', {
    projectId: 'p001',
    at: '2026-11-01T00:00:00Z',
    voterId: 'u1',
    name: 'Uma',
    avatar: null,
    direction: 'up',
  });
  await h.append('research.updated', 'r1', 'project-p001', {
    projectId: 'p001',
    at: '2026-11-01T00:00:00Z',
    state: 'researching',
    nextEligibleAt: null,
  });
  await h.append('ask.updated', 'u1', 'project-p001', {
    projectId: 'p001',
    askId: 'desk-1',
    status: 'answered',
    answer: 'Yes.',
    at: '2026-11-02T00:00:00Z',
  });
  await h.stores.catchUp();
}
