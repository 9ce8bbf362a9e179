/**
 * A replay's build, closed, has its tables analysed (readmodels/postgres/postgres-build-settle.ts): the
 * planner knows the generation the switch then serves, autovacuum or not (this machine's cluster runs
 * without it). A store that is not a build leaves analysis to autovacuum.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { DocWrite } from '../../readmodels/port.ts';
import { createPool } from '../../readmodels/postgres/postgres-pool.ts';
import { postgresReadStoreOn } from '../../readmodels/postgres/postgres-read-store.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';

const skip = await postgresSkipReason();

const doc = (i: number): DocWrite => ({
  id: `p${i}`,
  doc: { i },
  json: JSON.stringify({ i }),
  state: null,
  seq: i,
  writtenAt: '2026-11-20T08:00:00.000Z',
  sortKey: `2026-11-20T08:00:00.${String(i).padStart(3, '0')}Z`,
  facet: 'visible',
  keys: {},
});

describe('PostgreSQL build: analysed when closed', skipFor(skip), () => {
  let database: ScratchDatabase;
  beforeAll(async () => {
    database = await scratchDatabase('pulseboard_build_settle');
  });
  afterAll(async () => {
    await database?.drop();
  });

  /** The planner's row count of generation `generation`'s documents (-1: never analysed). */
  async function plannedRows(generation: number): Promise<number> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const result = await client.query<{ n: number }>(
        `SELECT reltuples::int AS n FROM pg_class WHERE oid = $1::regclass`,
        [`pulseboard_g${generation}.docs`],
      );
      return result.rows[0]!.n;
    } finally {
      await client.end();
    }
  }

  it('a build knows its 120 documents once closed; a live store is left to autovacuum', async () => {
    for (const [generation, build] of [
      [3, true],
      [4, false],
    ] as const) {
      const store = postgresReadStoreOn(createPool(database.url), generation, { ownsPool: true, build });
      const outcome = await store.commit(
        'projects',
        Array.from({ length: 120 }, (_, i) => doc(i + 1)),
        120,
        0,
      );
      assert.equal(outcome.ok, true);
      await store.close();
      assert.equal(await plannedRows(generation), build ? 120 : -1);
    }
  });
});
