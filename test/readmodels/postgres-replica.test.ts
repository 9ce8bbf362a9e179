/**
 * Replica reads' routing (readmodels/postgres/postgres-replica.ts), with two databases standing for a
 * primary and a replica that lags it: reads go to the replica only where it is as fresh as what was
 * served, a page bounded past the replica's checkpoint is read on the primary, a lagging or dead
 * replica sends reads to the primary, and the primary's commits are passed on once the replica has them.
 * (test/faults/replica.postgres.test.ts runs the same against a real streaming replica.)
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { CommitListener } from '../../readmodels/commit-signal.ts';
import type { DocWrite, ReadStore } from '../../readmodels/port.ts';
import { createPostgresReadStore } from '../../readmodels/postgres/postgres-read-store.ts';
import { createReplicaReads } from '../../readmodels/postgres/postgres-replica.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';

const skip = await postgresSkipReason();
const C = 'projects';

function doc(id: string, seq: number): DocWrite {
  const value = { id, seq };
  return {
    id,
    doc: value,
    json: JSON.stringify(value),
    state: null,
    seq,
    writtenAt: '2026-11-20T08:00:00.000Z',
    sortKey: `2026-11-20T08:00:${String(seq).padStart(2, '0')}.000Z`,
    facet: 'visible',
    keys: {},
  };
}

const ids = (rows: readonly { id: string }[]) => rows.map((r) => r.id);
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe('reads from a PostgreSQL replica', skipFor(skip), () => {
  const databases: ScratchDatabase[] = [];
  let primary: ReadStore;
  let replica: ReadStore;
  let replicaUrl = '';

  beforeAll(async () => {
    for (const name of ['pb_primary', 'pb_replica']) databases.push(await scratchDatabase(name));
    primary = createPostgresReadStore(databases[0]!.url);
    replica = createPostgresReadStore(databases[1]!.url);
    replicaUrl = databases[1]!.url;
    // The replica has replayed up to 3; the primary is at 10.
    assert.deepEqual(await primary.commit(C, [doc('a', 3)], 3, 0), { ok: true });
    assert.deepEqual(await primary.commit(C, [doc('b', 10)], 10, 3), { ok: true });
    assert.deepEqual(await replica.commit(C, [doc('a', 3)], 3, 0), { ok: true });
  });

  afterAll(async () => {
    await replica?.close();
    await primary?.close();
    for (const d of databases) await d.drop();
  });

  it('serves the replica while it is as fresh as what was served; a page bounded past it reads the primary', async () => {
    let now = 0;
    const reads = createReplicaReads(replicaUrl, createPostgresReadStore(databases[0]!.url), () => 0, {
      clock: () => now,
      onProblem: () => {},
    });
    try {
      assert.equal(await reads.store.checkpoint(C), 3);
      assert.deepEqual(ids((await reads.store.list(C, { offset: 0, limit: 10 })).docs), ['a']);
      const start = { after: { seq: 0, id: '' } };
      assert.deepEqual(ids(await reads.store.delta(C, { start, upToSeq: 3, limit: 10 })), ['a']);
      // A bound the replica has not reached (given by another process on the primary): b is not skipped.
      assert.deepEqual(ids(await reads.store.delta(C, { start, upToSeq: 10, limit: 10 })), ['a', 'b']);
      assert.ok(reads.counts().replica >= 3);

      // The primary was seen ahead (the checkpoint read looks at it beside the replica's); still behind after
      // the allowed lag: checkpoints and reads go to the primary, never back to an older answer.
      await settle();
      now += 1_500;
      assert.equal(await reads.store.checkpoint(C), 10);
      assert.deepEqual(ids((await reads.store.list(C, { offset: 0, limit: 10 })).docs), ['b', 'a']);
      assert.equal(await reads.store.count(C), 2);
      // The replica catches up: reads go back to it.
      assert.deepEqual(await replica.commit(C, [doc('b', 10)], 10, 3), { ok: true });
      const before = reads.counts().replica;
      assert.equal(await reads.store.checkpoint(C), 10);
      assert.equal((await reads.store.get(C, 'b'))?.seq, 10);
      assert.equal(reads.counts().replica, before + 2);
    } finally {
      await reads.close();
    }
  });

  it('a replica that does not answer: the primary serves, and the replica is tried again later', async () => {
    let now = 0;
    const problems: string[] = [];
    const other = createPostgresReadStore(databases[0]!.url);
    const reads = createReplicaReads('postgres://postgres@127.0.0.1:1/none', other, () => 0, {
      clock: () => now,
      onProblem: (m) => problems.push(m),
    });
    try {
      assert.equal(await reads.store.checkpoint(C), 10);
      assert.deepEqual(ids((await reads.store.list(C, { offset: 0, limit: 10 })).docs), ['b', 'a']);
      assert.equal(reads.counts().replica, 0);
      assert.deepEqual(problems, ['the PostgreSQL replica does not answer; reading the primary']);
      now += 5_000;
      assert.equal(await reads.store.checkpoint(C), 10);
      assert.equal(problems.length, 2, 'tried again after retryMs');
    } finally {
      await reads.close();
    }
  });

  it("passes the primary's commits on once the replica has them", async () => {
    const reads = createReplicaReads(replicaUrl, createPostgresReadStore(databases[0]!.url), () => 0, {
      onProblem: () => {},
    });
    const heard: [string, number][] = [];
    let emit: CommitListener = () => {};
    const feed = reads.paced({
      open(handlers) {
        emit = handlers.commit;
        handlers.live();
        return { close: async () => undefined };
      },
    });
    const opened = feed.open({ live: () => {}, commit: (c, p) => heard.push([c, p]), failed: () => {} });
    try {
      assert.deepEqual(await primary.commit(C, [doc('c', 12)], 12, 10), { ok: true });
      emit(C, 12);
      await settle();
      assert.deepEqual(heard, [], 'not before the replica has it');
      assert.deepEqual(await replica.commit(C, [doc('c', 12)], 12, 10), { ok: true });
      for (let i = 0; i < 100 && heard.length === 0; i++) await settle();
      assert.deepEqual(heard, [[C, 12]]);
    } finally {
      await opened.close();
      await reads.close();
    }
  });
});
