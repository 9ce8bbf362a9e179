import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createProjectorThread } from '../../bin/commands/projector-thread.ts';
import { parseConfig } from '../../config/config.ts';
import { PROJECTS_COLLECTION } from '../../projectors/projects.ts';
import { openStores } from '../../service/stores.ts';
import { eventually } from '../replay/support.ts';
import { appendSightings } from './support.ts';

describe('the projector worker thread', () => {
  it("posts each commit to the serving thread, with the collection's new checkpoint", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-worker-signal-'));
    // The worker reads its configuration from the environment it inherits, as under `serve`.
    process.env['PULSEBOARD_DATA_DIR'] = dir;
    const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir });
    if (!parsed.ok) throw new Error(parsed.reason);
    const stores = await openStores(parsed.config);
    const stop = new AbortController();
    const seen: [string, number][] = [];
    const thread = createProjectorThread({ onCommit: (collection, checkpoint) => seen.push([collection, checkpoint]) });
    const running = thread.run(stop.signal);
    try {
      await appendSightings(stores.log, { first: 0, count: 20, prefix: 'ws' });
      const head = await stores.log.headPosition();
      assert.ok(
        await eventually(() => seen.some(([c, cp]) => c === PROJECTS_COLLECTION && cp === head), 1_500),
        `commits seen: ${JSON.stringify(seen.slice(-3))}`,
      );
      // What it posted is what the worker committed.
      assert.equal(await stores.store.checkpoint(PROJECTS_COLLECTION), head);
      const checkpoints = seen.filter(([c]) => c === PROJECTS_COLLECTION).map(([, cp]) => cp);
      assert.deepEqual(
        checkpoints,
        [...checkpoints].sort((a, b) => a - b),
        'in commit order',
      );
    } finally {
      stop.abort();
      await running;
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
