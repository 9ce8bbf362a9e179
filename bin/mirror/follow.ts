import type { Client, ClientError } from '../../client/index.ts';
import { pause } from '../../client/http.ts';
import type { MirrorRow, MirrorState, MirrorStore } from './store.ts';

/**
 * The mirror's walk: from the stored cursor (or the beginning), page by page, rows committed in one
 * transaction with the cursor after them (while catching up, several pages together, committed as the next
 * are read); then, unless `once`, long-polls. A lost server, 429 or 503 is waited out and the walk resumed.
 */
export type FollowOptions = {
  client: Client;
  store: MirrorStore;
  /** Recorded with the cursor: which service the mirror follows. */
  source: string;
  once: boolean;
  limit: number;
  wait: number;
  /** Aborting finishes the page in hand (its commit) and stops. */
  signal: AbortSignal;
  onPage?: (page: { rows: number; caughtUp: boolean; state: MirrorState }) => void;
  onRetry?: (error: ClientError, seconds: number) => void;
};

export type FollowEnd =
  | { ok: true; end: 'caught_up' | 'stopped'; state: MirrorState }
  /** `beforeFirstPage`: nothing was ever answered (a wrong URL or key, rather than a failure along the way). */
  | { ok: false; beforeFirstPage: boolean; message: string; status: number | null };

/** The beginning of the archive: every row the service ever wrote, oldest write first. */
export const FROM_THE_BEGINNING = '1970-01-01T00:00:00Z';
/**
 * Pages of a walk with more to read are committed together up to this many rows (one transaction,
 * with the cursor after the last of them), as a store writes fewer, larger transactions faster.
 */
const COMMIT_ROWS = 1000;
/** Seconds before resuming after a lost connection that the client gave up on. */
const RESUME_PAUSE_SECONDS = 5;
/** Before the first answer a call waits this little: a wrong URL is reported at once, not after minutes of retries. */
const FIRST_CALL_WAIT_SECONDS = 3;
const TRANSIENT = new Set(['network_error', 'rate_limited', 'unavailable']);

export async function follow(options: FollowOptions): Promise<FollowEnd> {
  const { client, store, signal } = options;
  let state = await store.state();
  let answered = false;
  for (;;) {
    if (signal.aborted) return { ok: true, end: 'stopped', state };
    const start = state.cursor === null ? { since: FROM_THE_BEGINNING } : { cursor: state.cursor };
    // Until the service first answers, calls wait briefly; the feed is then opened again with the full budget.
    const brief = !answered;
    const feed = client.projects.changes({
      ...start,
      limit: options.limit,
      ...(options.once ? {} : { wait: options.wait }),
      signal,
      // The next page travels while this one is committed.
      prefetch: !brief,
      ...(brief ? { maxWaitSeconds: FIRST_CALL_WAIT_SECONDS } : {}),
    });
    let failed: ClientError | null = null;
    // Pages received and not yet committed: their rows, and the cursor after the last of them.
    let rows: MirrorRow[] = [];
    let cursor: string | null = null;
    // The cursor after the last page taken, whether its commit is done, under way or to come.
    let latest = state.cursor;
    // A commit under way while the next pages are read (one at most): a refusal, or null once done.
    let inFlight: Promise<FollowEnd | null> | null = null;
    /** Waits for the commit under way; a store's error is thrown here. */
    const settle = async (): Promise<FollowEnd | null> => {
      const commit = inFlight;
      inFlight = null;
      return commit ? await commit : null;
    };
    /** Starts committing what is held (rows and cursor in one transaction) once the commit before it is done. */
    const commitHeld = async (caughtUp: boolean): Promise<FollowEnd | null> => {
      const refused = await settle();
      if (refused) return refused;
      const batch = rows;
      const after = cursor;
      rows = [];
      cursor = null;
      inFlight = (async (): Promise<FollowEnd | null> => {
        if (after !== null) {
          const committed = await store.commit(state, batch, after, options.source);
          if (!committed.ok) return { ok: false, beforeFirstPage: false, message: committed.reason, status: null };
          state = committed.state;
        }
        options.onPage?.({ rows: batch.length, caughtUp, state });
        return null;
      })();
      // Its error is thrown where it is settled; until then it is not an unhandled rejection.
      inFlight.catch(() => {});
      return null;
    };
    for await (const step of feed) {
      if (!step.ok) {
        failed = step.error;
        break;
      }
      answered = true;
      const { page } = step;
      if (page.projects.length > 0 || page.cursor !== latest) {
        for (const project of page.projects) rows.push({ id: project.id, json: JSON.stringify(project) });
        cursor = page.cursor;
        latest = page.cursor;
      }
      // While there is more to read now, pages are committed together up to COMMIT_ROWS rows, and
      // the commit runs on while the next pages are read; otherwise it is waited for.
      const more = !step.caughtUp && !brief && !signal.aborted;
      if (!more || rows.length >= COMMIT_ROWS) {
        const refused = (await commitHeld(step.caughtUp)) ?? (more ? null : await settle());
        if (refused) return refused;
      }
      if (step.caughtUp && options.once) return { ok: true, end: 'caught_up', state };
      if (signal.aborted) {
        const refused = await settle();
        return refused ?? { ok: true, end: 'stopped', state };
      }
      if (brief) break;
    }
    // Pages received before a failure or a stop are kept.
    const refused = (cursor !== null ? await commitHeld(false) : null) ?? (await settle());
    if (refused) return refused;
    if (signal.aborted) return { ok: true, end: 'stopped', state };
    if (failed === null) continue;
    // A wrong URL answers nothing; a busy or restarting service is waited for, before and after the first page.
    const transient = TRANSIENT.has(failed.code) && (answered || failed.code !== 'network_error');
    if (!transient) return { ok: false, beforeFirstPage: !answered, message: describe(failed), status: failed.status };
    const seconds = failed.retryAfterSeconds ?? RESUME_PAUSE_SECONDS;
    options.onRetry?.(failed, seconds);
    if (!(await pause(seconds * 1000, signal))) return { ok: true, end: 'stopped', state };
  }
}

export function describe(error: ClientError): string {
  return `${error.status === null ? '' : `HTTP ${error.status} `}${error.code}: ${error.message}`;
}
