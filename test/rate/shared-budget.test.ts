import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createHarness, type Harness } from '../support/harness.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { connectClient, seedBoard } from '../mcp/support.ts';
import { tools } from '../../mcp/tools.ts';

/** REST and MCP requests with one key, on one limiter, until the budget of 10 runs out. */
async function exhaust(h: Harness, base: string, key: string): Promise<void> {
  const client: Client = await connectClient(base, key); // initialize + initialized: the protocol budget, not this one
  try {
    for (let i = 0; i < 3; i++) {
      const result = await client.callTool({ name: 'get_project', arguments: { handle: 'h1' } });
      assert.equal(result.isError ?? false, false);
    }
    for (let i = 0; i < 7; i++) assert.equal((await h.get('/v1/projects', key)).status, 200, `REST request ${i + 1}`);
    // 3 + 7 = 10: the budget is spent on both surfaces together.
    const rest = await h.get('/v1/projects', key);
    assert.equal(rest.status, 429);
    assert.ok(Number(rest.headers['retry-after']) >= 1);
    const tool = await client.callTool({ name: 'get_project', arguments: { handle: 'h1' } });
    assert.equal(tool.isError, true);
    assert.equal((tool.structuredContent as any).error.code, 'rate_limited');
    // Connecting and listing still work: they spend the protocol budget only.
    const second = await connectClient(base, key);
    assert.equal((await second.listTools()).tools.length, tools.length);
    await second.close();
  } finally {
    await client.close();
  }
}

describe('one budget per key over REST and MCP', () => {
  let redis: RedisServer;
  const harnesses: Harness[] = [];
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    for (const h of harnesses) await h.close();
    await redis.close();
  });

  for (const mode of ['in-process', 'redis'] as const) {
    it(`counts REST requests and MCP calls together (${mode} limiter)`, async () => {
      const env: Record<string, string> = { PULSEBOARD_RATE_LIMIT: '10' };
      if (mode === 'redis') Object.assign(env, { REDIS_URL: redis.url, PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS: '5000' });
      const h = await createHarness({ env });
      harnesses.push(h);
      await seedBoard(h);
      const key = await h.key('both-surfaces');
      const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
      await exhaust(h, base, key);
    });
  }
});
