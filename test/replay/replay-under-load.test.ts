import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { setImmediate as yieldToIo } from 'node:timers/promises';
import { PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS } from '../../projectors/projects.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';
import { eventually, startReplay, stopReplay, type ReplayChild, stable } from './support.ts';

/** Follows the delta from the start to the end: every page's URL and body. */
async function deltaPages(h: Harness, key: string): Promise<{ url: string; body: any }[]> {
  const pages: { url: string; body: any }[] = [];
  let url = '/v1/projects?since=2000-01-01T00:00:00Z&limit=40';
  for (let guard = 0; guard < 200; guard++) {
    const res = await h.get(url, key);
    assert.equal(res.status, 200);
    const body = res.json();
    pages.push({ url, body: stable(body) });
    if (!body.hasMore) break;
    url = `/v1/projects?cursor=${body.cursor}&limit=40`;
  }
  return pages;
}

async function referenceDump(h: Harness) {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-reference-'));
  const store = createSqliteReadStore(join(dir, 'reference.sqlite'));
  try {
    for (const p of projectors) await createProjectorRunner(h.stores.log, store, p).catchUp();
    return await dumpReadModels(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('pulseboard replay while the service serves', () => {
  it('answers every read from the live generation, switches without a restart, and keeps documents and cursors identical', async () => {
    const h = await createHarness();
    const stop = new AbortController();
    let background: Promise<void>[] = [];
    let replay: ReplayChild | null = null;
    try {
      await appendProjectHistory(h.stores.log, { projects: 150, steps: 3000, seed: 21 });
      const key = await h.key('reader', ['allow']);
      await h.stores.catchUp();
      // Projectors follow the log in the background, as `serve` runs them.
      background = h.stores.runners.map((r) => r.run(stop.signal));

      const board = (await h.get('/v1/projects', key)).json();
      const [first, second] = board.projects as { id: string }[];
      const before = {
        dump: await dumpReadModels(h.stores.store),
        delta: await deltaPages(h, key),
      };
      const midCursor = before.delta[2]!.body.cursor as string;
      const reads = [
        '/v1/projects',
        '/v1/projects?page=2',
        '/v1/projects?has_dossier=false&page=1',
        '/v1/projects?since=2000-01-01T00:00:00Z&limit=40',
        `/v1/projects?cursor=${midCursor}&limit=40`,
        `/v1/projects/${first!.id}`,
        `/v1/projects/${second!.id}?include=context`,
        `/v1/projects/${first!.id}/history?limit=5`,
      ];
      const expected = new Map<string, any>();
      for (const url of reads) expected.set(url, stable((await h.get(url, key)).json()));

      replay = startReplay(h.dir, { batchSize: 25 });
      let done = false;
      let readsDuringReplay = 0;
      let total = 0;
      const finished = replay.exited.then((run) => {
        done = true;
        return run;
      });
      // Read until the replay has exited and this process serves the new generation.
      while (!done || h.stores.generations()?.serving !== 1) {
        for (const url of reads) {
          const inFlight = replay.progressLines() > 0 && !done;
          const res = await h.get(url, key);
          assert.equal(res.status, 200, `${url} answered ${res.status}: ${res.body}`);
          assert.deepEqual(stable(res.json()), expected.get(url), `${url} changed`);
          total += 1;
          if (inFlight) readsDuringReplay += 1;
        }
        if (total > 200_000) assert.fail('the service never switched to the new generation');
        // app.inject never leaves the microtask queue: let the child's output and the pointer check in.
        await yieldToIo();
      }
      const run = await finished;
      assert.equal(run.code, 0, run.stderr);
      assert.ok(readsDuringReplay > 0, 'reads ran while the replay was projecting');
      assert.match(
        run.stderr,
        /replay: position \d+ of \d+ \(\d+\.\d%\), \d+ events applied, \d+ events\/s, (about \d+ s left|time left unknown)/,
      );
      assert.match(run.stderr, /switched to readmodels-1\.sqlite/);

      assert.equal(readFileSync(join(h.dir, 'readmodels.current'), 'utf8'), '1\n');
      assert.ok(!existsSync(join(h.dir, 'readmodels.sqlite')), 'the old generation is dropped');
      assert.ok(existsSync(join(h.dir, 'readmodels-1.sqlite')));

      assert.equal(firstDifference(await dumpReadModels(h.stores.store), before.dump), null);
      const after = await deltaPages(h, key);
      assert.deepEqual(after, before.delta, 'the same delta requests give the same pages and cursors');

      // The projectors carry on in the new generation from its own checkpoint.
      await appendProjectHistory(h.stores.log, { projects: 170, steps: 400, seed: 22, prefix: 'late' });
      const head = await h.stores.log.headPosition();
      assert.ok(await eventually(async () => (await h.stores.store.checkpoint(PROJECTS_COLLECTION)) >= head));
      assert.equal(firstDifference(await dumpReadModels(h.stores.store), await referenceDump(h)), null);
      const live = await h.stores.store.count(PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS);
      assert.equal((await h.get('/v1/projects', key)).json().total, live);
    } finally {
      await stopReplay(replay);
      stop.abort();
      await Promise.all(background);
      await h.close();
    }
  });

  it('keeps a delta consumer gap-free across the switch while ingest goes on', async () => {
    const h = await createHarness();
    const stop = new AbortController();
    let background: Promise<void>[] = [];
    let replay: ReplayChild | null = null;
    try {
      await appendProjectHistory(h.stores.log, { projects: 90, steps: 2000, seed: 31 });
      const key = await h.key('mirror');
      await h.stores.catchUp();
      background = h.stores.runners.map((r) => r.run(stop.signal));

      const mirror = new Map<string, string>();
      let cursor: string | null = null;
      const follow = async (): Promise<boolean> => {
        const url: string = cursor
          ? `/v1/projects?cursor=${cursor}&limit=23`
          : '/v1/projects?since=2000-01-01T00:00:00Z&limit=23';
        const res = await h.get(url, key);
        assert.equal(res.status, 200, res.body);
        const body = res.json();
        for (const p of body.projects) mirror.set(p.id, JSON.stringify(p));
        cursor = body.cursor;
        return body.hasMore as boolean;
      };

      let burst = 0;
      replay = startReplay(h.dir, { batchSize: 40 });
      let done = false;
      const finished = replay.exited.then((run) => {
        done = true;
        return run;
      });
      // Ingest in bursts and read a page between them, before, during and after the switch.
      let burstsDuringReplay = 0;
      let boardTotal = 0;
      while (!done || h.stores.generations()?.serving !== 1) {
        if (replay.progressLines() > 0 && !done) burstsDuringReplay += 1;
        await appendProjectHistory(h.stores.log, {
          projects: 110,
          steps: 15,
          seed: 200 + burst,
          prefix: `live${burst}`,
        });
        burst += 1;
        await follow();
        // Reads never go backwards across the switch: projects are only ever added to the board.
        const total = (await h.get('/v1/projects', key)).json().total as number;
        assert.ok(total >= boardTotal, `board total went from ${boardTotal} to ${total}`);
        boardTotal = total;
        if (burst > 5000) assert.fail('the service never switched to the new generation');
        await yieldToIo();
      }
      const run = await finished;
      assert.equal(run.code, 0, run.stderr);
      assert.ok(burstsDuringReplay > 0, 'ingest ran while the replay was projecting');
      for (let more = 0; more < 10; more++) {
        await appendProjectHistory(h.stores.log, {
          projects: 110,
          steps: 15,
          seed: 900 + more,
          prefix: `after${more}`,
        });
        await follow();
      }
      const head = await h.stores.log.headPosition();
      assert.ok(await eventually(async () => (await h.stores.store.checkpoint(PROJECTS_COLLECTION)) >= head));
      for (let guard = 0; guard < 500 && (await follow()); guard++);

      const truth = (
        await h.stores.store.list(PROJECTS_COLLECTION, { facets: PUBLIC_PROJECT_FACETS, offset: 0, limit: 100_000 })
      ).docs;
      assert.equal(mirror.size, truth.length, 'no row missed');
      for (const row of truth) assert.equal(mirror.get(row.id), JSON.stringify(row.doc), `row ${row.id} is current`);
      assert.equal(firstDifference(await dumpReadModels(h.stores.store), await referenceDump(h)), null);
    } finally {
      await stopReplay(replay);
      stop.abort();
      await Promise.all(background);
      await h.close();
    }
  });
});
