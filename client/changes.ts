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
     * Ask for the next page while the consumer handles this one (its cursor is known): the walk then
     * takes about as long as the slower of the two instead of their sum. A page fetched ahead and not
     * taken (the consumer stopped) has spent a request of the budget.
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
    const ownOptions = { ...callOptions, signal: signal ? AbortSignal.any([signal, stopped.signal]) : stopped.signal };
    const request = () => {
      const start = cursor === null ? { since: options.since! } : { cursor };
      const query: DeltaQuery = {
        ...start,
        limit,
        has_dossier: hasDossier,
        ...(caughtUp && wait !== undefined ? { wait } : {}),
      };
      return delta(query, ownOptions);
    };
    let ahead: Promise<Result<SyncPage>> | null = null;
    try {
      for (;;) {
        if (signal?.aborted) return;
        const result = await (ahead ?? request());
        ahead = null;
        if (!result.ok) {
          // A cancelled walk just ends: the consumer asked for it.
          if (result.error.code !== 'aborted') yield result;
          return;
        }
        cursor = result.value.cursor;
        caughtUp = !result.value.hasMore;
        const last = caughtUp && wait === undefined;
        if (options.prefetch && !last) {
          ahead = request();
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
