import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS } from '../../projectors/projects.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { createHarness } from '../support/harness.ts';
import { appendProjectHistory } from '../support/seed.ts';

describe('delta mirror', () => {
  it('follows the cursor while ingest keeps appending and ends identical to the read model', async () => {
    const h = await createHarness();
    const stop = new AbortController();
    let running: Promise<void>[] = [];
    try {
      const key = await h.key('mirror');
      await h.stores.catchUp();
      // Projectors follow the log in the background, in small batches, as `serve` runs them.
      running = projectors.map((p) =>
        createProjectorRunner(h.stores.log, h.stores.store, p, { batchSize: 13, idleWaitMs: 5 }).run(stop.signal),
      );

      const mirror = new Map<string, { json: string; fol: unknown }>();
      let cursor: string | null = null;
      let pages = 0;
      const follow = async () => {
        const url: string = cursor
          ? `/v1/projects?cursor=${cursor}&limit=17`
          : '/v1/projects?since=2000-01-01T00:00:00Z&limit=17';
        const body = (await h.get(url, key)).json();
        // A stored row is never newer than the committed checkpoint. The projectors keep committing (on
        // PostgreSQL from connections of their own): a row newer than the checkpoint read before it is
        // allowed only when a commit moved the checkpoint meanwhile, and never past it.
        const before = await h.stores.store.checkpoint(PROJECTS_COLLECTION);
        for (const p of body.projects) {
          const stored = await h.stores.store.get(PROJECTS_COLLECTION, p.id);
          assert.ok(stored, p.id);
          if (stored.seq > before) {
            const after = await h.stores.store.checkpoint(PROJECTS_COLLECTION);
            assert.ok(
              after > before && stored.seq <= after,
              `${p.id}: seq ${stored.seq}, checkpoint ${before} → ${after}`,
            );
          }
          mirror.set(p.id, { json: JSON.stringify(p), fol: p.fol });
        }
        cursor = body.cursor;
        pages += 1;
        return body.hasMore as boolean;
      };

      // Ingest in bursts, reading a page between bursts.
      for (let burst = 0; burst < 20; burst++) {
        await appendProjectHistory(h.stores.log, { projects: 70, steps: 40, seed: 100 + burst, prefix: `b${burst}` });
        await follow();
      }
      // Everything appended; let the projectors finish, then read until the cursor is exhausted.
      await h.stores.catchUp();
      for (let guard = 0; guard < 500 && (await follow()); guard++);

      const truth = (
        await h.stores.store.list(PROJECTS_COLLECTION, { facets: PUBLIC_PROJECT_FACETS, offset: 0, limit: 100_000 })
      ).docs;
      assert.equal(mirror.size, truth.length, 'no row missed');
      for (const row of truth)
        assert.equal(mirror.get(row.id)?.json, JSON.stringify(row.doc), `row ${row.id} is current`);
      assert.ok(pages > 20);
    } finally {
      stop.abort();
      await Promise.all(running);
      await h.close();
    }
  });

  it('names the page that follows in a Link header while there is more to read now, and only then', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('mirror');
      await appendProjectHistory(h.stores.log, { projects: 30, steps: 300, seed: 5, prefix: 'lk' });
      await h.stores.catchUp();
      let url = '/v1/projects?since=2000-01-01T00:00:00Z&limit=7';
      let pages = 0;
      for (;;) {
        const res = await h.get(url, key);
        const body = res.json();
        pages += 1;
        if (!body.hasMore) {
          assert.equal(res.headers.link, undefined, 'the last page names no follower');
          break;
        }
        const link = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link));
        assert.ok(link, `a Link header: ${res.headers.link}`);
        const next = new URL(link[1]!, 'http://localhost');
        assert.equal(next.pathname, '/v1/projects');
        assert.equal(next.searchParams.get('cursor'), body.cursor, "the body's cursor");
        assert.equal(next.searchParams.get('limit'), '7', 'the same limit');
        url = `${next.pathname}${next.search}`;
      }
      assert.ok(pages > 2);
      // Board pages and bookmarks name none.
      assert.equal((await h.get('/v1/projects?page=1', key)).headers.link, undefined);
      assert.equal((await h.get('/v1/projects?since=now', key)).headers.link, undefined);
    } finally {
      await h.close();
    }
  });
});
