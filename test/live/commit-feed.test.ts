/**
 * A store-wide commit feed (MongoDB's change stream, behind readmodels/commit-signal.ts's CommitFeed)
 * replaces the commit watch's poll: while it is live, a waiting long-poll reads no checkpoint until a
 * commit is signalled; when it fails, polling comes back until it is reopened.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { createCommitSignals, type CommitFeed, type CommitListener } from '../../readmodels/commit-signal.ts';
import { createCommitWatch } from '../../service/commit-watch.ts';
import { eventually } from '../replay/support.ts';

/** A feed the test drives: `live`, `commit` and `fail` act as the server would; reopens are counted. */
function drivenFeed() {
  let handlers: { live(): void; commit: CommitListener; failed(error: unknown): void } | undefined;
  const feed: CommitFeed = {
    open(given) {
      handlers = given;
      state.opens += 1;
      return { close: async () => undefined };
    },
  };
  const state = { opens: 0 };
  return {
    feed,
    state,
    live: () => handlers!.live(),
    commit: (collection: string, checkpoint: number) => handlers!.commit(collection, checkpoint),
    fail: () => handlers!.failed(new Error('injected: change stream lost')),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('commit watch over a store-wide commit feed', () => {
  it('reads no checkpoint while the feed is live and nothing commits, wakes on a commit it delivers, and polls again while the feed is down', async () => {
    const driven = drivenFeed();
    let reopen: (() => void) | undefined;
    const signals = createCommitSignals(driven.feed, { schedule: (run) => ((reopen = run), () => undefined) });
    let checkpoint = 5;
    let reads = 0;
    const watch = createCommitWatch({
      readCheckpoint: async () => {
        reads += 1;
        return checkpoint;
      },
      pollMs: 10,
      coverage: signals,
    });
    signals.subscribe(() => watch.notify());
    const waiting = watch.waitPast(5, { timeoutMs: 60_000 });
    assert.equal(driven.state.opens, 1, 'the feed opens on the first wait');
    driven.live();
    await sleep(50);
    const readsWhileLive = reads;
    await sleep(200);
    assert.equal(reads, readsWhileLive, `no poll while the feed is live (${reads} reads)`);
    checkpoint = 6;
    driven.commit('projects', 6);
    assert.equal(await waiting, 'passed');

    const next = watch.waitPast(6, { timeoutMs: 60_000 });
    driven.fail();
    const before = reads;
    assert.ok(await eventually(() => reads >= before + 3), 'polling resumes while the feed is down');
    checkpoint = 7;
    assert.equal(await next, 'passed', 'a commit is found by the poll');
    reopen!();
    assert.equal(driven.state.opens, 2, 'the feed is reopened');
    driven.live();
    const quiet = watch.waitPast(7, { timeoutMs: 60_000 });
    await sleep(50);
    const settled = reads;
    await sleep(200);
    assert.equal(reads, settled, 'no poll once the feed is live again');
    watch.close();
    assert.equal(await quiet, 'closed');
    await signals.close();
  });

  it('without a feed, waits poll as before (the embedded store, other processes)', async () => {
    const signals = createCommitSignals();
    let reads = 0;
    const watch = createCommitWatch({ readCheckpoint: async () => ((reads += 1), 0), pollMs: 10, coverage: signals });
    const waiting = watch.waitPast(5, { timeoutMs: 60_000 });
    assert.ok(await eventually(() => reads >= 3), 'polls');
    assert.equal(signals.feedState(), 'none');
    watch.close();
    assert.equal(await waiting, 'closed');
  });
});
