import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { parseConfig } from '../../config/config.ts';
import { issueKey } from '../../service/access.ts';
import { openStores } from '../../service/stores.ts';
import { startServe, stopChild } from '../support/cli.ts';

const BACKLOG = 500_000;
const BATCH = 10_000;

/**
 * A data directory whose event log is 500k events ahead of its read models: what a `serve` restarted
 * behind a large backlog finds. The events are appended raw, in large batches, through the log port.
 */
async function backlogDirectory(dir: string): Promise<string> {
  const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir });
  if (!parsed.ok) throw new Error(parsed.reason);
  const stores = await openStores(parsed.config);
  try {
    const issued = await issueKey(stores, 'reader');
    for (let batch = 0; batch < BACKLOG / BATCH; batch++) {
      const events = Array.from({ length: BATCH }, (_, i) => {
        const n = batch * BATCH + i;
        const at = new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
        return {
          id: randomUUID(),
          type: 'project.sighted',
          data: { projectId: `bk-${n % 20_000}`, handle: `bk${n % 20_000}`, fol: n, at },
        };
      });
      const appended = await stores.log.append(`backlog-${batch}`, events);
      assert.ok(appended.ok);
    }
    return issued.key;
  } finally {
    await stores.close();
  }
}

describe('serve restarted behind a backlog of 500k events', () => {
  let dir: string;
  let child: ChildProcess;
  let url = '';
  let key = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-backlog-'));
    key = await backlogDirectory(dir);
    ({ child, url } = await startServe({ PULSEBOARD_DATA_DIR: dir }));
  });

  afterAll(async () => {
    await stopChild(child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('listens first: answers /healthz and reports its lag in /readyz while its projections are still behind', async () => {
    assert.ok(url, 'it printed its URL');
    const live = await fetch(`${url}/healthz`);
    assert.equal(live.status, 200);
    assert.deepEqual(await live.json(), { status: 'ok' });

    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200, 'behind is not unready: it serves what is committed');
    const body = (await ready.json()) as { status: string; lag: Record<string, number | null> };
    assert.equal(body.status, 'ready');
    // Not a timing: the projects read model is still catching up when the first request is answered.
    assert.ok(body.lag.projects! > 0, `projects lag ${body.lag.projects} is reported while catching up`);

    // Reads serve up to the committed checkpoint meanwhile, with the key the command settled.
    const board = await fetch(`${url}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(board.status, 200);
    const again = (await (await fetch(`${url}/readyz`)).json()) as { lag: Record<string, number> };
    assert.ok(again.lag.projects! > 0, 'still behind after serving a read');
  });

  it('stops cleanly on SIGTERM while still catching up', async () => {
    assert.equal(await stopChild(child, 'SIGTERM'), 0);
  });
});
