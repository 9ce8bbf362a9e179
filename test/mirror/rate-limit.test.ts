import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { parseConfig } from '../../config/config.ts';
import { PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS } from '../../projectors/projects.ts';
import { openStores } from '../../service/stores.ts';
import { startServe, stopChild, type ServeProcess } from '../support/cli.ts';
import { firstDifference, sqliteSnapshot, startMirror } from './support.ts';

/** A budget the walk overruns by two requests: one 429 to wait out (the window is 60 s, so this test takes about a minute). */
const LIMIT = 6;

const metric = (text: string, decision: string) =>
  Number(new RegExp(`pulseboard_rate_limit_decisions_total\\{decision="${decision}"\\} (\\d+)`).exec(text)?.[1]);

describe('pulseboard mirror against a spent rate budget', () => {
  let dir: string;
  let serve: ServeProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-mirror-rate-'));
    serve = await startServe({ PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: String(LIMIT) }, { key: true });
    assert.ok(serve.url && serve.key, 'the server started');
  });

  afterAll(async () => {
    if (serve) await stopChild(serve.child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('finishes by waiting as Retry-After says: exit 0, no error line, a 429 or few, every project', async () => {
    const file = join(dir, 'mirror.sqlite');
    // A wrong key first: one line and exit 2 (a 401 spends none of the budget).
    const refused = startMirror([
      '--url',
      serve.url,
      '--key',
      `pbk_${'b'.repeat(43)}`,
      '--to',
      `sqlite:${file}`,
      '--once',
    ]);
    assert.equal(await refused.exited, 2, refused.stderr());
    assert.match(refused.stderr(), /^pulseboard mirror: HTTP 401 unauthorized: .*\(check --key\)\n$/);
    // 300 sample projects, 40 a page: 8 requests against a budget of 6.
    const mirror = startMirror([
      '--url',
      serve.url,
      '--key',
      serve.key,
      '--to',
      `sqlite:${file}`,
      '--once',
      '--limit',
      '40',
    ]);
    assert.equal(await mirror.exited, 0, mirror.stderr());
    assert.doesNotMatch(mirror.stderr(), /pulseboard mirror:|resuming/, 'said no error');
    assert.match(mirror.stderr(), /mirror: rate_limited; waiting \d+ s as the service asks/);
    assert.match(mirror.stderr(), /caught up; 300 rows/);

    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    assert.equal(metric(metrics, 'allowed'), 8);
    // A client that ignored Retry-After would have spun into dozens of refusals; one waiting as told
    // meets one, or a few when the sliding window frees its slot a moment after the whole second it advised.
    const limited = metric(metrics, 'limited');
    assert.ok(limited >= 1 && limited <= 3, `${limited} refusals`);

    // The truth, read from the service's own read model (a walk through the API would need the spent budget).
    await stopChild(serve.child, 'SIGTERM');
    const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir });
    assert.ok(parsed.ok);
    const stores = await openStores(parsed.config);
    try {
      const docs = (
        await stores.store.list(PROJECTS_COLLECTION, { facets: PUBLIC_PROJECT_FACETS, offset: 0, limit: 10_000 })
      ).docs;
      const truth = new Map(docs.map((d) => [d.id, JSON.stringify(d.doc)]));
      assert.equal(firstDifference(sqliteSnapshot(file), truth), null);
    } finally {
      await stores.close();
    }
  });
});
