import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
// Through the package export, as a consumer imports it.
import { createClient, type ProjectChange, type ProjectDiff } from 'pulseboard/client';
import { startServe, stopChild } from '../support/cli.ts';
import { watchedFetch } from '../support/watched-fetch.ts';

const EPOCH = '2000-01-01T00:00:00Z';

describe('the client walks the diff page by page', () => {
  let dir: string;
  let child: ChildProcess;
  let url = '';
  let key = '';
  /** The diff since the epoch (every project added), read one page at a time following `next`. */
  const reference: ProjectChange[] = [];
  let to = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-client-diff-'));
    ({ child, url, key } = await startServe(
      { PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '100000' },
      { key: true },
    ));
    assert.ok(url && key, 'the server started and printed a key');
    const client = createClient({ baseUrl: url, key });
    let page = await client.projects.diff({ from: EPOCH, limit: 40 });
    for (;;) {
      assert.ok(page.ok, JSON.stringify(page));
      reference.push(...page.value.changes);
      to = page.value.to.cursor;
      if (page.value.next === null) break;
      page = await client.projects.diff({ cursor: page.value.next, limit: 40 });
    }
  });

  afterAll(async () => {
    await stopChild(child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('yields the pages that following next gives, asking for each follower before the body before it is read', async () => {
    const board = await createClient({ baseUrl: url, key }).projects.board();
    assert.ok(board.ok);
    assert.equal(reference.length, board.value.total, 'every project on the board was added since the epoch');
    const pages = Math.ceil(reference.length / 40);
    assert.ok(pages >= 3, 'several pages to walk');

    for (const prefetch of [false, true]) {
      const events: string[] = [];
      const client = createClient({ baseUrl: url, key, fetch: watchedFetch(events) });
      const walked: ProjectDiff[] = [];
      for await (const step of client.projects.diffPages({ from: EPOCH, to, limit: 40, prefetch })) {
        assert.ok(step.ok, JSON.stringify(step));
        walked.push(step.page);
      }
      assert.deepEqual(
        walked.flatMap((p) => p.changes),
        reference,
        `prefetch ${prefetch}: the same rows`,
      );
      assert.equal(walked.length, pages);
      assert.equal(events.filter((e) => e === 'request').length, pages, 'no page asked for twice or past the end');
      // With prefetch the second page is asked for once the first page's Link header names it.
      assert.deepEqual(
        events.slice(0, 3),
        prefetch ? ['request', 'request', 'body'] : ['request', 'body', 'request'],
        `prefetch ${prefetch}`,
      );
    }
  });

  it('resumes from a page’s next, and a consumer that stops early asks for nothing more', async () => {
    const client = createClient({ baseUrl: url, key });
    const first = await client.projects.diff({ from: EPOCH, to, limit: 40 });
    assert.ok(first.ok && first.value.next !== null);
    const rest: ProjectChange[] = [];
    for await (const step of client.projects.diffPages({ cursor: first.value.next, limit: 40, prefetch: true })) {
      assert.ok(step.ok);
      rest.push(...step.page.changes);
    }
    assert.deepEqual([...first.value.changes, ...rest], reference);

    const events: string[] = [];
    const watching = createClient({ baseUrl: url, key, fetch: watchedFetch(events) });
    for await (const step of watching.projects.diffPages({ from: EPOCH, to, limit: 40, prefetch: true })) {
      assert.ok(step.ok);
      break;
    }
    // The page asked for ahead was cancelled with the walk: no request after it.
    assert.equal(events.filter((e) => e === 'request').length, 2);
  });

  it('yields a failure once and ends', async () => {
    const client = createClient({ baseUrl: url, key });
    const steps = [];
    for await (const step of client.projects.diffPages({ cursor: 'not-a-cursor', prefetch: true })) steps.push(step);
    assert.equal(steps.length, 1);
    assert.equal(steps[0]!.ok ? null : steps[0]!.error.code, 'bad_request');
  });
});
