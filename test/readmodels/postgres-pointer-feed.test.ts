/**
 * On PostgreSQL a serving process follows `pulseboard replay`'s switch by the pointer's NOTIFY, not by
 * reading the pointer every 200 ms, and says which generations it uses by holding a lock on its own
 * session, not by writing an announcement every second (issue 60, item 3; bench/live-timers.bench.ts
 * counts what idle processes cost the server). The store here polls hourly: only the notification can
 * move it within the test's bound.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { openGenerationalReadStore } from '../../readmodels/generations/generational-read-store.ts';
import { createPostgresGenerationSpace } from '../../readmodels/postgres/postgres-generations.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';
import { eventually as pollUntil } from '../replay/support.ts';

const skip = await postgresSkipReason();
const HOUR = 3_600_000;

/** A bound, not a timing: true once `check` holds, false after 20 s. */
const eventually = (check: () => Promise<boolean> | boolean) => pollUntil(check, 200, 100);

describe('PostgreSQL: the pointer followed by NOTIFY, generations held by a session lock', () => {
  let database: ScratchDatabase | undefined;
  beforeAll(async () => {
    if (!skip) database = await scratchDatabase('pulseboard_pointer');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it(
    'a switch moves a serving store that polls hourly; the old generation is released with its lock',
    skipFor(skip),
    async () => {
      const opened = await openGenerationalReadStore(createPostgresGenerationSpace(database!.url), {
        collections: ['projects'],
        pollMs: HOUR,
        fallbackPollMs: HOUR,
        onProblem: (message) => assert.fail(message),
      });
      assert.ok(opened.ok);
      const serving = opened.value;
      const replay = createPostgresGenerationSpace(database!.url);
      try {
        assert.equal(await replay.inUse(0), true, 'the serving store holds generation 0');
        await replay.open(1, 'build').close();
        assert.deepEqual(await replay.switchPointer(0, 1), { ok: true });
        assert.ok(
          await eventually(() => serving.generations().serving === 1),
          `still serving ${JSON.stringify(serving.generations())}: the switch's NOTIFY was not followed`,
        );
        assert.ok(await eventually(async () => !(await replay.inUse(0))), 'generation 0 released');
        assert.equal(await replay.inUse(1), true);
      } finally {
        await serving.close();
        assert.equal(await replay.inUse(1), false, 'a closed store holds nothing');
        await replay.close();
      }
    },
  );
});
