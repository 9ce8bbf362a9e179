import type { CallOptions, ClientError, DeltaQuery, Result, SyncPage } from './types.ts';

/**
 * The delta as an async iterator of pages. It moves its cursor only past a page it received, retries
 * what the call layer retries, and once caught up (`hasMore` false) either ends or, with `wait`,
 * follows with long-polls. A failure it cannot wait out is yielded once and ends the iteration;
 * `cursor` then still names the last page received, to resume from.
 */
export type ChangesOptions = Pick<DeltaQuery, 'limit' | 'has_dossier'> &
  ({ since: string; cursor?: never } | { cursor: string; since?: never }) & {
    /** Long-poll seconds (1–30) once caught up; without it the iteration ends when caught up. */
    wait?: number;
    signal?: AbortSignal;
    maxWaitSeconds?: number;
    /**
     * Ask for the next page once this one's headers name it (`Link: rel="next"`), or else once its
     * body is read: the server then makes a page while this side parses and handles the one before.
     * One page ahead at most; a page fetched ahead and not taken has spent a request of the budget.
     */
    prefetch?: boolean;
  };

/** One step: a page (and whether it reached the end of what was written), or the failure that ended the walk. */
export type ChangeStep = { ok: true; page: SyncPage; caughtUp: boolean } | { ok: false; error: ClientError };

export type ChangeFeed = AsyncIterable<ChangeStep> & {
  /** The cursor after the last page received (null before the first): where a later walk resumes. */
  readonly cursor: string | null;
};

type DeltaCall = (query: DeltaQuery, options: CallOptions) => Promise<Result<SyncPage>>;

/** A page asked for, from its cursor, and the page after it once asked for ahead of the consumer. */
type Pending = {
  readonly from: string | null;
  readonly page: Promise<Result<SyncPage>>;
  /** The cursor its answer's Link header named for the page after it. */
  named: string | null;
  follower: Pending | null;
};

export function changeFeed(delta: DeltaCall, options: ChangesOptions): ChangeFeed {
  let cursor: string | null = options.cursor ?? null;
  const { limit, has_dossier: hasDossier, wait, signal } = options;
  const callOptions: CallOptions = {
    ...(signal ? { signal } : {}),
    ...(options.maxWaitSeconds === undefined ? {} : { maxWaitSeconds: options.maxWaitSeconds }),
  };

  async function* walk(): AsyncGenerator<ChangeStep> {
    let caughtUp = false;
    // Cancels a page fetched ahead once the consumer stops.
    const stopped = new AbortController();
    const ownOptions: CallOptions = {
      ...callOptions,
      signal: signal ? AbortSignal.any([signal, stopped.signal]) : stopped.signal,
    };
    const request = (from: string | null, hold: boolean): Pending => {
      const start = from === null ? { since: options.since! } : { cursor: from };
      const query: DeltaQuery = {
        ...start,
        limit,
        has_dossier: hasDossier,
        ...(hold && wait !== undefined ? { wait } : {}),
      };
      // Assigned before any answer can arrive: fetch answers in a later turn.
      let pending!: Pending;
      // A page whose headers name its follower (Link rel="next") has that one asked for before its own
      // body is read, so the server makes it while this side parses this one; never more than one ahead.
      const onNext = (next: URL) => {
        pending.named = next.searchParams.get('cursor');
        if (pending === awaited) askFollower(pending);
      };
      pending = {
        from,
        page: delta(query, options.prefetch ? { ...ownOptions, onNext } : ownOptions),
        named: null,
        follower: null,
      };
      return pending;
    };
    const askFollower = (pending: Pending) => {
      if (pending.named !== null && pending.follower === null) pending.follower = request(pending.named, false);
    };
    let awaited: Pending | null = null;
    let ahead: Pending | null = null;
    try {
      for (;;) {
        if (signal?.aborted) return;
        const current: Pending = ahead ?? request(cursor, caughtUp);
        ahead = null;
        awaited = current;
        askFollower(current);
        const result = await current.page;
        if (!result.ok) {
          // A cancelled walk just ends: the consumer asked for it.
          if (result.error.code !== 'aborted') yield result;
          return;
        }
        cursor = result.value.cursor;
        caughtUp = !result.value.hasMore;
        const last = caughtUp && wait === undefined;
        // A follower asked for from another cursor than the body's is not the next page: it is dropped.
        if (current.follower?.from === cursor) ahead = current.follower;
        else if (options.prefetch && !last) {
          ahead = request(cursor, caughtUp);
          // fetch writes the request in a later turn of the event loop: without this turn it would
          // wait behind the consumer's synchronous work on this page (a store commit), not overlap it.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        yield { ok: true, page: result.value, caughtUp };
        if (last) return;
      }
    } finally {
      stopped.abort();
    }
  }

  return {
    get cursor() {
      return cursor;
    },
    [Symbol.asyncIterator]: () => walk(),
  };
}
