import type { CallOptions, ClientError, Result } from './types.ts';

/**
 * A cursor-paged read (each page names its follower's cursor, null on the last) as an async iterator
 * of pages, in order. A failure it cannot wait out is yielded once and ends the walk; the last page
 * received names where to resume. Stopping early cancels a page asked for ahead.
 */
export type PageWalkOptions = {
  signal?: AbortSignal;
  maxWaitSeconds?: number;
  /**
   * Ask for the next page once this one's headers name it (`Link: rel="next"`), or else once its
   * body is read: the server then makes a page while this side parses and handles the one before.
   * One page ahead at most; a page fetched ahead and not taken has spent a request of the budget.
   */
  prefetch?: boolean;
};

export type PageStep<T> = { ok: true; page: T } | { ok: false; error: ClientError };

/**
 * `call(null, false)` asks for the first page, `call(cursor, hold)` for the page a cursor names; `hold`
 * (a follower of a caught-up delta page) asks the server to wait for a write before it answers.
 */
type PageCall<T> = (cursor: string | null, hold: boolean, options: CallOptions) => Promise<Result<T>>;

/** Where the page after `page` starts, and whether to ask for it held; null after the last page. */
export type NextPage<T> = (page: T) => { cursor: string; hold: boolean } | null;

/** A page asked for, from its cursor, and the page after it once asked for ahead of the consumer. */
type Pending<T> = {
  readonly from: string | null;
  readonly page: Promise<Result<T>>;
  /** The cursor its answer's Link header named for the page after it. */
  named: string | null;
  follower: Pending<T> | null;
};

export function walkPages<T>(
  call: PageCall<T>,
  nextOf: NextPage<T>,
  options: PageWalkOptions,
): AsyncIterable<PageStep<T>> {
  const { signal, prefetch } = options;

  async function* walk(): AsyncGenerator<PageStep<T>> {
    // Cancels a page fetched ahead once the consumer stops.
    const stopped = new AbortController();
    const own: CallOptions = {
      ...(options.maxWaitSeconds === undefined ? {} : { maxWaitSeconds: options.maxWaitSeconds }),
      signal: signal ? AbortSignal.any([signal, stopped.signal]) : stopped.signal,
    };
    let awaited: Pending<T> | null = null;
    const request = (from: string | null, hold: boolean): Pending<T> => {
      // Assigned before any answer can arrive: fetch answers in a later turn.
      let pending!: Pending<T>;
      // Only the page being awaited asks for its follower: never more than one page ahead.
      const onNext = (next: URL) => {
        pending.named = next.searchParams.get('cursor');
        if (pending === awaited) askFollower(pending);
      };
      pending = { from, page: call(from, hold, prefetch ? { ...own, onNext } : own), named: null, follower: null };
      return pending;
    };
    const askFollower = (pending: Pending<T>) => {
      if (pending.named !== null && pending.follower === null) pending.follower = request(pending.named, false);
    };
    let ahead: Pending<T> | null = null;
    let next: { cursor: string; hold: boolean } | null = null;
    try {
      for (;;) {
        if (signal?.aborted) return;
        const current: Pending<T> = ahead ?? request(next?.cursor ?? null, next?.hold ?? false);
        ahead = null;
        awaited = current;
        askFollower(current);
        const result = await current.page;
        if (!result.ok) {
          // A cancelled walk just ends: the consumer asked for it.
          if (result.error.code !== 'aborted') yield result;
          return;
        }
        next = nextOf(result.value);
        // A follower asked for from another cursor than the body's is not the next page: it is dropped.
        if (next !== null && current.follower?.from === next.cursor) ahead = current.follower;
        else if (next !== null && prefetch) {
          ahead = request(next.cursor, next.hold);
          // fetch writes the request in a later turn of the event loop: without this turn it would
          // wait behind the consumer's synchronous work on this page, not overlap it.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        yield { ok: true, page: result.value };
        if (next === null) return;
      }
    } finally {
      stopped.abort();
    }
  }

  return { [Symbol.asyncIterator]: () => walk() };
}
