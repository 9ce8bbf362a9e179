/**
 * History on MCP (issue 43): list_projects, get_project and search_projects with asOf, and
 * diff_projects, each answering the REST twin's body (structuredContent and text) while the board
 * keeps moving; a bad point is a tool error carrying bad_request, as REST's 400.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { appendBoardHistory, appendHistoryRounds } from '../support/board-history.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { connectClient } from './support.ts';

const START = Date.parse('2026-11-01T00:00:00Z');

describe('history tools over MCP', () => {
  let h: Harness;
  let key: string;
  let client: Client;
  /** recordedAt instants between the rounds of appends. */
  const rounds: string[] = [];

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    h = await createHarness();
    key = await h.key('analyst', ['allow']);
    const points = await appendHistoryRounds(h.stores, { rounds: 3, projects: 80, steps: 150, seed: 300, prefix: 'm' });
    rounds.push(...points.map((p) => p.after));
    const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    client = await connectClient(base, key);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    vi.useRealTimers();
    await h?.close();
  });

  /** Calls a tool and its REST twin; asserts the tool's result is the REST body (a tool error for a refusal). */
  async function sameAsRest(tool: string, args: Record<string, unknown>, url: string) {
    const [result, rest] = await Promise.all([client.callTool({ name: tool, arguments: args }), h.get(url, key)]);
    assert.deepEqual(result.structuredContent, rest.json(), `${tool} ${JSON.stringify(args)} vs ${url}`);
    assert.deepEqual(result.content, [{ type: 'text', text: rest.body }]);
    assert.equal(result.isError ?? false, rest.status !== 200, `${tool}: REST answered ${rest.status}`);
    return { result, rest: rest.json() };
  }

  const q = encodeURIComponent;

  it('list_projects with asOf is the REST board as of that point; its cursor pins later pages while the board moves', async () => {
    const at = rounds[1]!;
    const { rest: first } = await sameAsRest('list_projects', { asOf: at }, `/v1/projects?asOf=${q(at)}`);
    assert.ok(first.total > 50 && first.asOf.at <= at, 'a board of more than one page, named by its point');
    await sameAsRest('list_projects', { asOf: at, hasDossier: true }, `/v1/projects?asOf=${q(at)}&has_dossier=true`);

    // More writes land; page 2 as of the first answer's cursor is the board at that point still.
    vi.advanceTimersByTime(60_000);
    await appendBoardHistory(h.stores.log, { projects: 80, steps: 40, seed: 999, prefix: 'late' });
    await h.stores.catchUp();
    const { rest: second } = await sameAsRest(
      'list_projects',
      { asOf: first.asOf.cursor, page: 2 },
      `/v1/projects?asOf=${first.asOf.cursor}&page=2`,
    );
    assert.deepEqual(second.asOf, first.asOf);
    assert.equal(second.total, first.total);
  });

  it('get_project with asOf is the REST project as it stood then, not_found before its first sighting', async () => {
    const at = rounds[0]!;
    let found = 0;
    for (let n = 0; n < 80; n += 9) {
      const { rest } = await sameAsRest(
        'get_project',
        { handle: `proj-${n}`, asOf: at },
        `/v1/projects/proj-${n}?asOf=${q(at)}`,
      );
      if (rest.error) {
        assert.equal(rest.error.code, 'not_found');
      } else {
        assert.equal(rest.project.id, `proj-${n}`);
        found++;
      }
    }
    assert.ok(found > 0, 'some projects were on the board then');
    const early = new Date(START).toISOString();
    const { result } = await sameAsRest(
      'get_project',
      { handle: 'proj-1', asOf: early },
      `/v1/projects/proj-1?asOf=${q(early)}`,
    );
    assert.equal((result.structuredContent as any).error.code, 'not_found');
    await sameAsRest(
      'get_project',
      { handle: 'proj-2', asOf: rounds[2]!, include: 'context' },
      `/v1/projects/proj-2?asOf=${q(rounds[2]!)}&include=context`,
    );
  });

  it('search_projects with asOf is the REST search as of that point', async () => {
    const at = rounds[0]!;
    const { rest } = await sameAsRest(
      'search_projects',
      { q: 'proj-3', asOf: at },
      `/v1/search?q=proj-3&asOf=${q(at)}`,
    );
    assert.equal(typeof rest.asOf.cursor, 'string');
    await sameAsRest('search_projects', { q: 'proj-3' }, '/v1/search?q=proj-3');
  });

  it('diff_projects pages are the REST diff pages, followed with next', async () => {
    const [from, to] = [rounds[0]!, rounds[2]!];
    let args: Record<string, unknown> = { from, to, limit: 7 };
    let url = `/v1/projects/diff?from=${q(from)}&to=${q(to)}&limit=7`;
    let rows = 0;
    for (let pages = 0; pages < 40; pages++) {
      const { rest } = await sameAsRest('diff_projects', args, url);
      rows += rest.changes.length;
      if (rest.next === null) break;
      args = { cursor: rest.next, limit: 7 };
      url = `/v1/projects/diff?cursor=${rest.next}&limit=7`;
    }
    assert.ok(rows > 7, `more than one page of changes (${rows})`);
  });

  it("sync_projects with include 'changes' is the REST delta page with changes, from the beginning without a start", async () => {
    const { rest: first } = await sameAsRest(
      'sync_projects',
      { since: rounds[0]!, include: 'changes', limit: 20, view: 'full' },
      `/v1/projects?since=${q(rounds[0]!)}&include=changes&limit=20`,
    );
    assert.equal(first.changes.length, first.projects.length);
    assert.ok(first.changes.some((c: { changedFields: string[] }) => c.changedFields.length > 0));
    const { rest: next } = await sameAsRest(
      'sync_projects',
      { cursor: first.cursor, include: 'changes', view: 'full' },
      `/v1/projects?cursor=${first.cursor}&include=changes&limit=30`,
    );
    assert.equal(next.changes.length, next.projects.length);
    await sameAsRest(
      'sync_projects',
      { include: 'changes', view: 'full' },
      '/v1/projects?since=1970-01-01T00:00:00Z&include=changes&limit=30',
    );
    const waiting = await client.callTool({
      name: 'sync_projects',
      arguments: { cursor: first.cursor, include: 'changes', waitSeconds: 2 },
    });
    assert.equal((waiting.structuredContent as any).error.code, 'bad_request');
  });

  it('a bad point is a tool error carrying bad_request, as REST answers 400', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['list_projects', { asOf: 'yesterday' }, '/v1/projects?asOf=yesterday'],
      ['get_project', { handle: 'proj-1', asOf: 'yesterday' }, '/v1/projects/proj-1?asOf=yesterday'],
      ['search_projects', { q: 'proj-1', asOf: 'yesterday' }, '/v1/search?q=proj-1&asOf=yesterday'],
      ['diff_projects', { from: 'yesterday' }, '/v1/projects/diff?from=yesterday'],
      ['diff_projects', {}, '/v1/projects/diff'],
    ];
    for (const [tool, args, url] of cases) {
      const { result } = await sameAsRest(tool, args, url);
      assert.equal((result.structuredContent as any).error.code, 'bad_request', `${tool} ${JSON.stringify(args)}`);
    }
    // The compact view reads today's write times: not offered for a past board.
    const summary = await client.callTool({ name: 'list_projects', arguments: { asOf: rounds[0]!, view: 'summary' } });
    assert.equal(summary.isError, true);
    assert.equal((summary.structuredContent as any).error.code, 'bad_request');
  });
});
