import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'vitest';
import { parseConfig } from '../../config/config.ts';
import { openStores } from '../../service/stores.ts';
import { appendProjectHistory, dumpReadModels, firstDifference, prng } from '../support/seed.ts';
import { createHarness } from '../support/harness.ts';

const configFor = (dir: string) => {
  const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.config;
};

describe('rebuild', () => {
  it('drops the read models, projects again, and gets byte-identical documents, writtenAt and cursors', async () => {
    const h = await createHarness();
    try {
      await appendProjectHistory(h.stores.log, { projects: 80, steps: 1500, seed: 7 });
      const key = await h.key('r');
      await h.stores.catchUp();
      const before = await dumpReadModels(h.stores.store);
      const firstPage = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=30', key)).json();
      const secondBefore = (await h.get(`/v1/projects?cursor=${firstPage.cursor}&limit=30`, key)).json();

      await h.stores.store.clear();
      await h.stores.catchUp();

      assert.equal(firstDifference(await dumpReadModels(h.stores.store), before), null);
      const again = (await h.get('/v1/projects?since=2000-01-01T00:00:00Z&limit=30', key)).json();
      assert.equal(again.cursor, firstPage.cursor);
      const secondAfter = (await h.get(`/v1/projects?cursor=${firstPage.cursor}&limit=30`, key)).json();
      assert.deepEqual(secondAfter.projects, secondBefore.projects);
      assert.equal(secondAfter.cursor, secondBefore.cursor);
    } finally {
      await h.close();
    }
  });
});

/** Runs the child projector, killing it with SIGKILL after `killAfter` batches (or letting it finish). */
function runChild(dir: string, killAfter: number | null): Promise<'killed' | 'done'> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', join(import.meta.dirname, '../support/project-child.ts'), dir],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let batches = 0;
    let killed = false;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'batch') batches += 1;
      if (killAfter !== null && batches >= killAfter && !killed) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve('killed');
      else if (code === 0) resolve('done');
      else reject(new Error(`child exited with ${code}`));
    });
  });
}

describe('crash recovery', () => {
  it('gives the same read models after SIGKILLs at random batches as an uninterrupted run', async () => {
    const crashed = mkdtempSync(join(tmpdir(), 'pulseboard-crash-'));
    const reference = mkdtempSync(join(tmpdir(), 'pulseboard-ref-'));
    try {
      const seeded = await openStores(configFor(crashed));
      await appendProjectHistory(seeded.log, { projects: 60, steps: 1200, seed: 11 });
      await seeded.close();
      // The same log (same positions and recordedAt) in both directories.
      copyFileSync(join(crashed, 'events.sqlite'), join(reference, 'events.sqlite'));

      const rand = prng(3);
      let kills = 0;
      for (let attempt = 0; attempt < 6; attempt++) {
        const outcome = await runChild(crashed, 1 + Math.floor(rand() * 60));
        if (outcome === 'killed') kills += 1;
      }
      assert.ok(kills >= 3, `expected several kills, got ${kills}`);
      assert.equal(await runChild(crashed, null), 'done');

      const crashedStores = await openStores(configFor(crashed));
      const referenceStores = await openStores(configFor(reference));
      try {
        await referenceStores.catchUp();
        assert.equal(
          firstDifference(await dumpReadModels(crashedStores.store), await dumpReadModels(referenceStores.store)),
          null,
        );
      } finally {
        await crashedStores.close();
        await referenceStores.close();
      }
    } finally {
      rmSync(crashed, { recursive: true, force: true });
      rmSync(reference, { recursive: true, force: true });
    }
  });
});
