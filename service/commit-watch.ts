/**
 * Waiting for the next commit of one collection, at no cost per waiter while idle. Every waiter
 * registers a threshold; one check per process (one checkpoint read) wakes every waiter the
 * serving checkpoint has passed. A check runs when a commit is signalled (the projectors of this
 * process or its worker thread, and, where the store has one, a store-wide feed of every process's
 * commits: MongoDB's change stream) and, while anyone waits and no store-wide feed is live, at most
 * every `pollMs`: commits made elsewhere (another process's projectors, MongoDB shared by several
 * instances, a replay whose generation the reads move to) are seen that way. Checks never overlap;
 * a signal arriving during one runs exactly one more. Every signal is read even with no waiter (one read per commit, not
 * per waiter), so a waiter registering just after a commit finds it already known and passes at once.
 */

export type WaitOutcome = 'passed' | 'timeout' | 'aborted' | 'closed';

export type CommitWatch = {
  /**
   * Resolves 'passed' once the serving checkpoint is beyond `after`, 'timeout' after `timeoutMs`,
   * 'aborted' when `signal` aborts, 'closed' when the watch is closed (shutdown).
   */
  waitPast(after: number, options: { timeoutMs: number; signal?: AbortSignal }): Promise<WaitOutcome>;
  /** A commit was signalled: check the checkpoint now. */
  notify(): void;
  /** Aborts on close: streams end on it. */
  readonly closed: AbortSignal;
  /** Ends every wait ('closed') and refuses new ones at once. */
  close(): void;
  /** How many waits are pending (tests, the benchmark). */
  waiting(): number;
  /** How many checkpoint reads were made so far (tests, the benchmark). */
  reads(): number;
};

export const DEFAULT_POLL_MS = 250;

type Waiter = { after: number; settle(outcome: WaitOutcome): void };

export type CommitWatchDeps = {
  readCheckpoint: () => Promise<number>;
  pollMs?: number;
  /**
   * The process's commit signals where they can cover every process (commit-signal.ts): followed from
   * the first wait on, and while `complete()` no poll runs; a feed that goes down brings polling back.
   */
  coverage?: { complete(): boolean; follow(listener: (complete: boolean) => void): () => void };
};

export function createCommitWatch(deps: CommitWatchDeps): CommitWatch {
  const pollMs = deps.pollMs ?? DEFAULT_POLL_MS;
  const waiters = new Set<Waiter>();
  const closing = new AbortController();
  let known = -1;
  let reads = 0;
  let checking = false;
  let again = false;
  let poll: NodeJS.Timeout | null = null;
  let unfollow: (() => void) | undefined;

  function wake(checkpoint: number): void {
    for (const waiter of waiters) if (checkpoint > waiter.after) waiter.settle('passed');
  }

  async function check(): Promise<void> {
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    try {
      do {
        again = false;
        reads += 1;
        try {
          known = Math.max(known, await deps.readCheckpoint());
        } catch {
          // A store that does not answer now is asked again at the next signal or poll.
          continue;
        }
        wake(known);
      } while (again && !closing.signal.aborted);
    } finally {
      checking = false;
    }
  }

  function updatePolling(): void {
    if (waiters.size > 0 && deps.coverage && !unfollow && !closing.signal.aborted) {
      // A commit made while the feed was down or opening is found by one check when it turns live.
      unfollow = deps.coverage.follow(() => {
        void check();
        updatePolling();
      });
    }
    const covered = deps.coverage?.complete() === true;
    if (waiters.size > 0 && !covered && !poll && !closing.signal.aborted) {
      poll = setInterval(() => void check(), pollMs);
      poll.unref();
    } else if ((waiters.size === 0 || covered) && poll) {
      clearInterval(poll);
      poll = null;
    }
  }

  return {
    closed: closing.signal,

    waitPast(after, options) {
      if (closing.signal.aborted) return Promise.resolve('closed');
      if (options.signal?.aborted) return Promise.resolve('aborted');
      if (known > after) return Promise.resolve('passed');
      return new Promise<WaitOutcome>((resolve) => {
        const onAbort = () => waiter.settle('aborted');
        const timer = setTimeout(() => waiter.settle('timeout'), Math.max(0, options.timeoutMs));
        const waiter: Waiter = {
          after,
          settle(outcome) {
            if (!waiters.delete(waiter)) return;
            clearTimeout(timer);
            options.signal?.removeEventListener('abort', onAbort);
            updatePolling();
            resolve(outcome);
          },
        };
        waiters.add(waiter);
        options.signal?.addEventListener('abort', onAbort, { once: true });
        updatePolling();
      });
    },

    notify() {
      void check();
    },

    close() {
      closing.abort();
      unfollow?.();
      for (const waiter of waiters) waiter.settle('closed');
      updatePolling();
    },

    waiting: () => waiters.size,
    reads: () => reads,
  };
}
