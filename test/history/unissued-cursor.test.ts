/**
 * A well-formed cursor whose position lies past the event log's head was never issued: it is refused
 * with the 400 a malformed cursor gets, as asOf, from, to and a delta cursor, on REST and MCP alike.
 * A position the log holds but the read models have not reached yet stays 503 with Retry-After.
 */
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { encodeCursor } from '../../service/cursor.ts';
import { appendSightings } from '../live/support.ts';
import { connectClient } from '../mcp/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';

describe('a cursor past the event log head', () => {
  let h: Harness;
  let key: string;
  let base: string;
  let client: Client;
  let archive: string;
  let head: number;
  const cursorAt = (seq: number, id = '') => encodeCursor({ v: 1, a: archive, s: seq, i: id, f: 'all' });

  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('analyst');
    await appendSightings(h.stores.log, { first: 0, count: 5, prefix: 'uc' });
    await h.stores.catchUp();
    archive = await h.stores.log.archiveId();
    head = await h.stores.log.headPosition();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    client = await connectClient(base, key);
  });
  afterAll(async () => {
    await client?.close();
    await h?.close();
  });

  const refused = async (url: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(res.status, 400, `${url}: ${JSON.stringify(body)}`);
    assert.equal(body.error.code, 'bad_request', url);
    assert.match(body.error.message, /cursor this service issued/, url);
  };

  it('is 400 as asOf, from and to, as a delta cursor (with and without wait or include), and to open a stream', async () => {
    const held = cursorAt(head);
    for (const past of [cursorAt(head + 1), cursorAt(head + 1_000_000, 'uc-1')]) {
      await refused(`/v1/projects?asOf=${past}`);
      await refused(`/v1/projects/uc-1?asOf=${past}`);
      await refused(`/v1/search?q=uc-1&asOf=${past}`);
      await refused(`/v1/projects/diff?from=${past}`);
      await refused(`/v1/projects/diff?from=${held}&to=${past}`);
      await refused(`/v1/projects?cursor=${past}`);
      await refused(`/v1/projects?cursor=${past}&wait=30`);
      await refused(`/v1/projects?cursor=${past}&include=changes`);
      await refused(`/v1/projects/changes?cursor=${past}`);
      await refused('/v1/projects/changes?since=now', { 'last-event-id': past });
    }
    assert.equal(h.services.changes.openCount(), 0);
  });

  it('is a bad_request tool error on MCP, through the same service functions', async () => {
    const past = cursorAt(head + 1);
    for (const [name, args] of [
      ['list_projects', { asOf: past }],
      ['get_project', { handle: 'uc-1', asOf: past }],
      ['diff_projects', { from: past }],
      ['sync_projects', { cursor: past }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      assert.equal(result.isError, true, name);
      assert.equal((result.structuredContent as any).error.code, 'bad_request', name);
    }
  });

  it('a position the log holds but the read models have not reached is still 503 with Retry-After (asOf) or waited for (delta)', async () => {
    await appendSightings(h.stores.log, { first: 100, count: 3, prefix: 'uc' });
    const ahead = cursorAt(await h.stores.log.headPosition());
    const asOf = await h.get(`/v1/projects?asOf=${ahead}`, key);
    assert.equal(asOf.status, 503);
    assert.ok(Number(asOf.headers['retry-after']) >= 1);
    const delta = await h.get(`/v1/projects?cursor=${ahead}`, key);
    assert.equal(delta.status, 200);
    assert.deepEqual(delta.json().projects, []);
    assert.equal(delta.json().cursor, ahead);
    await h.stores.catchUp();
    assert.equal((await h.get(`/v1/projects?asOf=${ahead}`, key)).status, 200);
  });
});
