/**
 * `pulseboard replay` with MongoDB read models (MONGODB_URL), on a real server started by
 * testcontainers: generation N lives in `<collection>_v<N>`. The same flows as the embedded tests
 * (replay-kill, replay-under-load), with the collections checked by name.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { skipFor } from '../support/skip.ts';
import { setImmediate as yieldToIo } from 'node:timers/promises';
import { MongoClient } from 'mongodb';
import { GENERATIONS_COLLECTION } from '../../readmodels/mongodb/mongodb-layout.ts';
import { skipUnlessDocker, startMongo } from '../support/containers.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { appendProjectHistory, dumpReadModels, firstDifference } from '../support/seed.ts';
import { startReplay, stopReplay, type ReplayChild, stable } from './support.ts';

const skip = await skipUnlessDocker('MongoDB');

async function collectionNames(url: string): Promise<string[]> {
  const client = new MongoClient(url);
  try {
    return (await client.db().listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
  } finally {
    await client.close();
  }
}

async function livePointer(url: string): Promise<unknown> {
  const client = new MongoClient(url);
  try {
    return (
      (
        await client
          .db()
          .collection<{ _id: string; generation: number }>(GENERATIONS_COLLECTION)
          .findOne({ _id: 'live' })
      )?.generation ?? null
    );
  } finally {
    await client.close();
  }
}

describe('pulseboard replay on MongoDB read models', () => {
  let server: Awaited<ReturnType<typeof startMongo>> | undefined;
  beforeAll(async () => {
    if (!skip) server = await startMongo();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(
    'a killed replay changes nothing; the next builds <collection>_v1 while reads go on, switches, and drops the old collections',
    { ...skipFor(skip), timeout: 600_000 },
    async () => {
      assert.ok(server);
      const url = server.url('pulseboard_replay');
      const env = { MONGODB_URL: url };
      const h: Harness = await createHarness({ env });
      const stop = new AbortController();
      let background: Promise<void>[] = [];
      let replay: ReplayChild | null = null;
      try {
        await appendProjectHistory(h.stores.log, { projects: 80, steps: 1500, seed: 51 });
        const key = await h.key('reader', ['allow']);
        await h.stores.catchUp();
        background = h.stores.runners.map((r) => r.run(stop.signal));
        const before = await dumpReadModels(h.stores.store);
        const reads = ['/v1/projects', '/v1/projects?page=2', '/v1/projects?since=2000-01-01T00:00:00Z&limit=40'];
        const expected = new Map<string, unknown>();
        for (const read of reads) expected.set(read, stable((await h.get(read, key)).json()));
        assert.ok((await collectionNames(url)).includes('projects'));

        const killed = startReplay(h.dir, {
          batchSize: 20,
          env,
          onProgress: (line, child) => {
            if (line === 10) child.kill('SIGKILL');
          },
        });
        const dead = await killed.exited;
        assert.equal(dead.signal, 'SIGKILL', dead.stderr);
        assert.ok(
          (await collectionNames(url)).includes('projects_v1'),
          'the killed replay left its partial generation',
        );
        assert.equal(await livePointer(url), null, 'the pointer was never written');
        for (const read of reads) assert.deepEqual(stable((await h.get(read, key)).json()), expected.get(read));

        replay = startReplay(h.dir, { batchSize: 100, env });
        let done = false;
        const finished = replay.exited.then((run) => {
          done = true;
          return run;
        });
        let total = 0;
        while (!done || h.stores.generations()?.serving !== 1) {
          for (const read of reads) {
            const res = await h.get(read, key);
            assert.equal(res.status, 200, `${read} answered ${res.status}: ${res.body}`);
            assert.deepEqual(stable(res.json()), expected.get(read), `${read} changed`);
            total += 1;
          }
          if (total > 100_000) assert.fail('the service never switched to the new generation');
          await yieldToIo();
        }
        const run = await finished;
        assert.equal(run.code, 0, run.stderr);
        assert.match(run.stderr, /removed collections \*_v1, left by an interrupted replay/);
        assert.match(run.stderr, /switched to collections \*_v1 \(generation 1\)/);
        assert.match(run.stderr, /removed the collections without a _v suffix \(generation 0\)/);
        assert.equal(await livePointer(url), 1);

        const names = await collectionNames(url);
        assert.ok(names.includes('projects_v1') && names.includes('_pulseboard_checkpoints_v1'), names.join(', '));
        assert.ok(
          !names.includes('projects') && !names.includes('_pulseboard_checkpoints'),
          `generation 0 is dropped: ${names.join(', ')}`,
        );
        assert.equal(firstDifference(await dumpReadModels(h.stores.store), before), null);
      } finally {
        await stopReplay(replay);
        stop.abort();
        await Promise.all(background);
        await h.close();
      }
    },
  );
});
