import { walkPages } from './pages.ts';
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

export function changeFeed(delta: DeltaCall, options: ChangesOptions): ChangeFeed {
  let cursor: string | null = options.cursor ?? null;
  const { limit, has_dossier: hasDossier, wait } = options;
  // A walk starts where the last one left off: `from` is null only for a walk's first page.
  const call = (from: string | null, hold: boolean, callOptions: CallOptions) => {
    const at = from ?? cursor;
    const start = at === null ? { since: options.since! } : { cursor: at };
    return delta(
      { ...start, limit, has_dossier: hasDossier, ...(hold && wait !== undefined ? { wait } : {}) },
      callOptions,
    );
  };
  // Once caught up (`hasMore` false) the walk ends, or with `wait` follows with long-polls.
  const nextOf = (page: SyncPage) =>
    !page.hasMore && wait === undefined ? null : { cursor: page.cursor, hold: !page.hasMore };

  async function* walk(): AsyncGenerator<ChangeStep> {
    for await (const step of walkPages(call, nextOf, options)) {
      if (!step.ok) {
        yield step;
        return;
      }
      cursor = step.page.cursor;
      yield { ok: true, page: step.page, caughtUp: !step.page.hasMore };
    }
  }

  return {
    get cursor() {
      return cursor;
    },
    [Symbol.asyncIterator]: () => walk(),
  };
}
