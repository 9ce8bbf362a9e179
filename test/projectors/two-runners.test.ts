/**
 * Two projection runners on one read store (two connections in one process, then two processes):
 * the compare-and-set commit lets exactly one of them apply each batch, so no fold is applied twice,
 * no checkpoint moves back, and the documents equal those one runner alone builds.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectionRunner } from '../../projectors/runner.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';
import { chainProblems, recordingCommits, type RecordedCommit } from './fixtures/recording-store.ts';

const RACER = join(import.meta.dirname, 'fixtures', 'projection-racer.ts');

describe('two projection runners on one read store', () => {
  let dir: string;
  let log: EventLog;
  let reference: ReadStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-two-runners-'));
    log = createSqliteEventLog(join(dir, 'events.sqlite'));
    await appendProjectHistory(log, { projects: 40, steps: 1200, seed: 17 });
    reference = createSqliteReadStore(join(dir, 'reference.sqlite'));
    await createProjectionRunner(log, reference, projectors).catchUp();
  });

  afterAll(async () => {
    await reference.close();
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('in one process, over two connections: every batch applied once, checkpoints only forward', async () => {
    const path = join(dir, 'shared.sqlite');
    const [a, b] = [createSqliteReadStore(path), createSqliteReadStore(path)];
    try {
      const commits: RecordedCommit[] = [];
      const runners = [
        createProjectionRunner(
          log,
          recordingCommits(a, (c) => commits.push(c)),
          projectors,
          { batchSize: 37 },
        ),
        createProjectionRunner(
          log,
          recordingCommits(b, (c) => commits.push(c)),
          projectors,
          { batchSize: 53 },
        ),
      ];
      await Promise.all(runners.map((r) => r.catchUp()));
      const head = await log.headPosition();
      assert.deepEqual(chainProblems(commits, head), []);
      assert.deepEqual(
        new Set(commits.filter((c) => c.ok).map((c) => c.collection)),
        new Set(projectors.map((p) => p.collection)),
      );
      assert.ok(
        commits.some((c) => !c.ok),
        'the runners raced: some commits were refused',
      );
      assert.equal(firstDifference(await dumpReadModels(a), await dumpReadModels(reference)), null);

      // Following the log together: new events, both runners running, the same result again.
      const stop = new AbortController();
      const running = runners.map((r) => r.run(stop.signal));
      await appendProjectHistory(log, { projects: 40, steps: 300, seed: 18, prefix: 'more' });
      await createProjectionRunner(log, reference, projectors).catchUp();
      const newHead = await log.headPosition();
      for (const runner of runners) await runner.catchUp();
      stop.abort();
      await Promise.all(running);
      assert.deepEqual(chainProblems(commits, newHead), []);
      assert.equal(firstDifference(await dumpReadModels(b), await dumpReadModels(reference)), null);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('in two processes: every batch applied once, checkpoints only forward', { timeout: 120_000 }, async () => {
    const path = join(dir, 'processes.sqlite');
    const racers = ['29', '41'].map((batch) =>
      spawn(
        process.execPath,
        ['--disable-warning=ExperimentalWarning', RACER, join(dir, 'events.sqlite'), path, batch],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      ),
    );
    const commits: RecordedCommit[] = [];
    const outputs = await Promise.all(
      racers.map(async (child) => {
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        let done = false;
        for await (const line of createInterface({ input: child.stdout })) {
          if (line === 'done') done = true;
          else commits.push(JSON.parse(line) as RecordedCommit);
        }
        const code = child.exitCode ?? (await new Promise<number | null>((resolve) => child.on('exit', resolve)));
        return { done, code, stderr };
      }),
    );
    for (const output of outputs)
      assert.deepEqual({ done: output.done, code: output.code }, { done: true, code: 0 }, output.stderr);
    assert.deepEqual(chainProblems(commits, await log.headPosition()), []);
    const store = createSqliteReadStore(path);
    try {
      assert.equal(firstDifference(await dumpReadModels(store), await dumpReadModels(reference)), null);
    } finally {
      await store.close();
    }
  });
});
