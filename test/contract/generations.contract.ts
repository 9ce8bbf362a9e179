/**
 * The GenerationSpace contract (readmodels/generations/port.ts): one suite, run unchanged
 * against every adapter. Each test gets a space of its own (an empty data directory or database).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { skipFor } from '../support/skip.ts';
import { ReplayFencedError, type GenerationSpace } from '../../readmodels/generations/port.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import type { ContractOptions } from './eventlog.contract.ts';

export type GenerationSpaceHandle = {
  space: GenerationSpace;
  /** A second space over the same place, as another process would open it. */
  reopen(): GenerationSpace;
  /** Leaves a replay lock as a killed replay would: held by nobody alive. */
  plantDeadLock(): Promise<void>;
  /** Closes every space opened here and removes what they created. */
  dispose(): Promise<void>;
};

export type OpenSpace = (options: { clock: () => number }) => Promise<GenerationSpaceHandle>;

const COLLECTION = 'projects';

function doc(id: string, seq: number): DocWrite {
  return {
    id,
    doc: { id, title: `doc ${id}` },
    json: JSON.stringify({ id, title: `doc ${id}` }),
    state: null,
    seq,
    writtenAt: '2026-11-20T08:00:00.000Z',
    sortKey: '2026-11-20T08:00:00.000Z',
    facet: 'visible',
    keys: { handle: [id] },
  };
}

export function generationSpaceContract(adapterName: string, open: OpenSpace, options: ContractOptions = {}): void {
  const skip = options.skip ?? false;
  const name = (what: string) => `${adapterName}: ${what}`;

  async function withSpace(
    work: (handle: GenerationSpaceHandle, clock: { now: number }) => Promise<void>,
  ): Promise<void> {
    const clock = { now: Date.parse('2026-11-22T08:00:00Z') };
    const handle = await open({ clock: () => clock.now });
    try {
      await work(handle, clock);
    } finally {
      await handle.dispose();
    }
  }

  describe(`GenerationSpace contract: ${adapterName}`, () => {
    it(
      name('generation 0 is live before any switch, and the stamp holds still while nothing changes'),
      skipFor(skip),
      () =>
        withSpace(async ({ space }) => {
          assert.deepEqual(await space.readPointer(), { ok: true, generation: 0 });
          assert.equal(await space.pointerStamp(), await space.pointerStamp());
          assert.deepEqual(await space.list(), []);
          assert.equal(await space.exists(1), false);
        }),
    );

    it(name('a switch is a compare-and-set that every opener of the space sees'), skipFor(skip), () =>
      withSpace(async (handle) => {
        const { space } = handle;
        const before = await space.pointerStamp();
        assert.deepEqual(await space.switchPointer(0, 1), { ok: true });
        assert.deepEqual(await space.readPointer(), { ok: true, generation: 1 });
        assert.notEqual(await space.pointerStamp(), before);

        const stale = await space.switchPointer(0, 2);
        assert.equal(stale.ok, false, 'a switch from a generation that is no longer live is refused');
        assert.deepEqual(await space.readPointer(), { ok: true, generation: 1 });

        const other = handle.reopen();
        assert.deepEqual(await other.readPointer(), { ok: true, generation: 1 });
        assert.deepEqual(await other.switchPointer(1, 2), { ok: true });
        assert.deepEqual(await space.readPointer(), { ok: true, generation: 2 });
      }),
    );

    it(name('of two switches from the same live generation, exactly one wins'), skipFor(skip), () =>
      withSpace(async (handle) => {
        const results = await Promise.all([handle.space.switchPointer(0, 1), handle.reopen().switchPointer(0, 1)]);
        assert.equal(results.filter((r) => r.ok).length, 1);
        assert.deepEqual(await handle.space.readPointer(), { ok: true, generation: 1 });
      }),
    );

    it(name('generations are separate stores: documents, lookups, checkpoints and clear'), skipFor(skip), () =>
      withSpace(async ({ space }) => {
        const zero = space.open(0);
        const one = space.open(1);
        try {
          await zero.commit(COLLECTION, [doc('a', 3)], 3);
          await one.commit(COLLECTION, [doc('b', 7)], 7);
          assert.equal((await zero.get(COLLECTION, 'a'))?.seq, 3);
          assert.equal(await zero.get(COLLECTION, 'b'), null);
          assert.equal(await one.get(COLLECTION, 'a'), null);
          assert.deepEqual(await one.findIds(COLLECTION, 'handle', 'b', 10), ['b']);
          assert.equal(await zero.checkpoint(COLLECTION), 3);
          assert.equal(await one.checkpoint(COLLECTION), 7);
          assert.deepEqual(await space.list(), [0, 1]);
          assert.equal(await space.exists(1), true);

          await one.clear();
          assert.equal(await one.get(COLLECTION, 'b'), null);
          assert.equal(await one.checkpoint(COLLECTION), 0);
          assert.equal((await zero.get(COLLECTION, 'a'))?.seq, 3, 'clearing one generation leaves the others');
          assert.equal(await zero.checkpoint(COLLECTION), 3);
        } finally {
          await zero.close();
          await one.close();
        }
      }),
    );

    it(
      name('remove drops one generation and nothing else; closing a store leaves the space usable'),
      skipFor(skip),
      () =>
        withSpace(async ({ space }) => {
          const zero = space.open(0);
          const two = space.open(2);
          await zero.commit(COLLECTION, [doc('a', 3)], 3);
          await two.commit(COLLECTION, [doc('b', 9)], 9);
          await two.close();
          await space.remove(2);
          assert.deepEqual(await space.list(), [0]);
          assert.equal(await space.exists(2), false);
          assert.equal((await zero.get(COLLECTION, 'a'))?.seq, 3);
          await zero.close();

          const again = space.open(2);
          try {
            assert.equal(await again.get(COLLECTION, 'b'), null, 'a removed generation opens empty');
            assert.equal(await again.checkpoint(COLLECTION), 0);
          } finally {
            await again.close();
          }
        }),
    );

    it(
      name('one replay lock at a time; released, it can be taken again; a dead holder is taken over'),
      skipFor(skip),
      () =>
        withSpace(async (handle) => {
          const first = await handle.space.acquireReplayLock();
          assert.ok(first.ok);
          assert.equal(await first.held(), true);
          const second = await handle.reopen().acquireReplayLock();
          assert.equal(second.ok, false, 'a second replay is refused while the first holds the lock');
          assert.match(second.ok ? '' : second.reason, /another replay is running/);
          await first.release();
          assert.equal(await first.held(), false);

          const third = await handle.reopen().acquireReplayLock();
          assert.ok(third.ok);
          await third.release();

          await handle.plantDeadLock();
          const fourth = await handle.space.acquireReplayLock();
          assert.ok(fourth.ok, `the lock of a replay that is gone is taken over: ${fourth.ok ? '' : fourth.reason}`);
          await fourth.release();
        }),
    );

    it(
      name('each replay lock has a newer fence; a fence older than the newest lock switches and removes nothing'),
      skipFor(skip),
      () =>
        withSpace(async (handle) => {
          const { space } = handle;
          const built = space.open(1);
          await built.commit(COLLECTION, [doc('a', 3)], 3);
          await built.close();
          const first = await space.acquireReplayLock();
          assert.ok(first.ok);
          await first.release();
          const second = await handle.reopen().acquireReplayLock();
          assert.ok(second.ok);
          try {
            assert.ok(second.fence > first.fence, `${second.fence} > ${first.fence}`);
            assert.equal((await space.remove(1, first.fence)).ok, false);
            assert.equal(await space.exists(1), true, 'an old fence removed nothing');
            assert.equal((await space.switchPointer(0, 1, first.fence)).ok, false);
            assert.deepEqual(await space.readPointer(), { ok: true, generation: 0 });
            assert.deepEqual(await space.switchPointer(0, 1, second.fence), { ok: true });
            assert.deepEqual(await space.remove(1, second.fence), { ok: true });
            assert.equal(await space.exists(1), false);
          } finally {
            await second.release();
          }
        }),
    );

    it(name('a replay whose lock lapsed and was taken over can no longer build, switch or remove'), skipFor(skip), () =>
      withSpace(async (handle, clock) => {
        const first = await handle.space.acquireReplayLock();
        assert.ok(first.ok);
        clock.now += 3_600_000; // past any lease: a replay stopped this long
        const second = await handle.reopen().acquireReplayLock();
        if (!second.ok) {
          // This space's lock cannot lapse while its holder lives (the embedded one is the OS's).
          assert.match(second.reason, /another replay is running/);
          assert.equal(await first.held(), true);
          await first.release();
          return;
        }
        try {
          assert.equal(await first.held(), false);
          const stale = handle.space.open(1, 'build', first.fence);
          try {
            await assert.rejects(stale.commit(COLLECTION, [doc('a', 3)], 3), ReplayFencedError);
          } finally {
            await stale.close();
          }
          const fresh = handle.reopen().open(1, 'build', second.fence);
          try {
            assert.deepEqual(await fresh.commit(COLLECTION, [doc('b', 4)], 4), { ok: true });
          } finally {
            await fresh.close();
          }
          assert.equal((await handle.space.remove(1, first.fence)).ok, false);
          assert.equal((await handle.space.switchPointer(0, 1, first.fence)).ok, false);
          assert.deepEqual(await handle.space.switchPointer(0, 1, second.fence), { ok: true });
          const live = handle.space.open(1);
          try {
            assert.equal(await live.get(COLLECTION, 'a'), null, 'the stale build wrote nothing');
            assert.equal((await live.get(COLLECTION, 'b'))?.seq, 4);
          } finally {
            await live.close();
          }
        } finally {
          await second.release();
          await first.release();
        }
      }),
    );

    it(
      name(
        'announcements keep a generation in use exactly where removal would disturb its users, until withdrawn, stale or their process ends',
      ),
      skipFor(skip),
      () =>
        withSpace(async (handle, clock) => {
          const { space } = handle;
          const other = handle.reopen();
          await space.announce('reader-a', [0, 1]);
          if (!space.removalDisturbsUsers) {
            // Removal cannot disturb a user here (an unlinked file stays readable), so nothing is ever in use.
            assert.equal(await other.inUse(0), false);
            return;
          }
          assert.equal(await other.inUse(0), true, 'another opener sees the announcement');
          assert.equal(await other.inUse(1), true);
          assert.equal(await other.inUse(2), false);

          await space.announce('reader-a', [1]);
          assert.equal(await other.inUse(0), false, 'a changed announcement is written at once');
          assert.equal(await other.inUse(1), true);

          await space.announce('reader-b', [1]);
          await space.withdraw('reader-a');
          assert.equal(await other.inUse(1), true, 'reader-b still uses generation 1');

          if (space.announceEveryMs === undefined) {
            // Held by the process's session (PostgreSQL): no renewal; it ends when the process does.
            clock.now += 60_000;
            assert.equal(await other.inUse(1), true, 'held without renewal');
            const third = handle.reopen();
            await third.announce('reader-c', [7]);
            assert.equal(await other.inUse(7), true);
            await third.close();
            assert.equal(await other.inUse(7), false, 'a process that ends lets go of what it used');
            return;
          }
          // Renewed only while a replay runs (MongoDB): idle, an announcement holds however old it is.
          clock.now += 60_000;
          assert.equal(await other.inUse(1), true, 'idle users write nothing, and still count');
          const replay = await other.acquireReplayLock();
          assert.ok(replay.ok);
          try {
            assert.equal(await other.inUse(1), true, 'until users have had time to hear of the replay');
            clock.now += 11_000;
            assert.equal(await other.inUse(1), false, 'an announcement nobody renewed during a replay goes stale');
            await space.announce('reader-b', [1]);
            assert.equal(await other.inUse(1), true, 'renewed');
          } finally {
            await replay.release();
          }
        }),
    );
  });
}
