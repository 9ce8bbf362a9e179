import type { Project } from '../readmodels/schemas.ts';
import type { HeldKeys, KeyHold } from './access.ts';
import type { CommitWatch } from './commit-watch.ts';
import { errorResponse, errors, fail, ok, type Result } from './errors.ts';
import type { HistoryBoardService } from './history-board.ts';
import type { ChangeFeed, ProjectsService } from './projects.ts';
import { changeStreamQuerySchema } from './requests/history-board.ts';
import { parseParams } from './requests/params.ts';

/**
 * GET /v1/projects/changes: the delta as a server-sent event stream. One event per written project
 * row in delta order (id: the delta cursor after that row, data: the Project JSON as stored), so a
 * reconnect with Last-Event-ID continues exactly after the last row received: no row twice, none
 * missed, across a replay too (the cursor is the log's position). Idle, the stream waits on the
 * process's commit watch like a long-poll, and sends a comment at least every `heartbeatMs`.
 * With include=changes each row is preceded by a `changes` event (no id: a reconnect after it sends
 * both again) naming the fields that differ from the project as of the stream's starting point.
 * The key is checked again before each batch of rows and, idle, at least every KEY_RECHECK_MS: a
 * key revoked or expired meanwhile ends the stream with an `error` event (the error envelope).
 */

/** At most this many open streams per key in one process; the next is refused with 429. */
export const MAX_OPEN_STREAMS_PER_KEY = 2;
export const HEARTBEAT_MS = 15_000;
/** Rows read per store read while catching up. */
const READ_BATCH = 500;

export type ChangeEvent =
  | { kind: 'row'; cursor: string; json: string }
  | { kind: 'changes'; json: string }
  | { kind: 'heartbeat' }
  /** The last event of a stream whose key no longer authenticates: the error envelope. */
  | { kind: 'error'; json: string };

/** Who opened a stream: its key's id (the slot) and the credential as sent (checked again while it is open). */
export type StreamHolder = { keyId: string; authorization: string | undefined };

const UNAUTHORIZED_EVENT = JSON.stringify(errorResponse(errors.unauthorized()).body);

export type OpenStream = {
  events: AsyncIterable<ChangeEvent>;
  /** Gives the key's slot back (idempotent); call when the connection ends. */
  close(): void;
};

export type ChangeStreams = {
  /** Checks the starting point, then takes one of the key's stream slots; `signal` aborts when the client goes away. */
  open(
    holder: StreamHolder,
    query: unknown,
    lastEventId: string | undefined,
    signal: AbortSignal,
  ): Promise<Result<OpenStream>>;
  /** Open streams in this process (tests, the benchmark). */
  openCount(): number;
};

export function createChangeStreams(deps: {
  projects: ProjectsService;
  commits: CommitWatch;
  /** include=changes: where a stream starts, and each row's changed fields since then. */
  history?: Pick<HistoryBoardService, 'startOf' | 'changedSince'>;
  /** Re-checks each open stream's key; without it a stream is not checked after it opened (tests). */
  keys?: HeldKeys;
  heartbeatMs?: number;
}): ChangeStreams {
  const { projects, commits, history, keys } = deps;
  const heartbeatMs = deps.heartbeatMs ?? HEARTBEAT_MS;
  const openByKey = new Map<string, number>();
  let total = 0;

  /** The `changes` event of each row: its fields that differ from the project as of position `at`. */
  async function changesOf(at: number, rows: readonly { json: string }[]): Promise<string[]> {
    const found = await history!.changedSince(
      at,
      rows.map((r) => JSON.parse(r.json) as Project),
    );
    // Not expected once the stream opened (the history was there); ending the stream lets the client reconnect.
    if (!found.ok) throw new Error(found.error.message);
    return found.value.map((c) => JSON.stringify(c));
  }

  async function* events(
    feed: ChangeFeed,
    changesFrom: number | undefined,
    signal: AbortSignal,
    hold: KeyHold | undefined,
  ): AsyncGenerator<ChangeEvent> {
    const ended = AbortSignal.any(hold ? [signal, commits.closed, hold.revoked] : [signal, commits.closed]);
    let lastSent = performance.now();
    while (!ended.aborted) {
      const batch = await feed.next(READ_BATCH);
      if (batch.rows.length > 0 && hold && !(await hold.check())) break;
      const changes =
        changesFrom === undefined || batch.rows.length === 0 ? undefined : await changesOf(changesFrom, batch.rows);
      for (const [n, row] of batch.rows.entries()) {
        if (changes) yield { kind: 'changes', json: changes[n]! };
        yield { kind: 'row', ...row };
        lastSent = performance.now();
      }
      if (batch.hasMore) continue;
      const quiet = heartbeatMs - (performance.now() - lastSent);
      if (quiet <= 0) {
        yield { kind: 'heartbeat' };
        lastSent = performance.now();
        continue;
      }
      const outcome = await commits.waitPast(batch.upToSeq, { timeoutMs: quiet, signal: ended });
      if (outcome === 'aborted' || outcome === 'closed') break;
    }
    if (hold?.revoked.aborted) yield { kind: 'error', json: UNAUTHORIZED_EVENT };
  }

  return {
    async open(holder, query, lastEventId, signal) {
      const { keyId } = holder;
      const parsed = parseParams(changeStreamQuerySchema, query);
      if (!parsed.ok) return fail(errors.badRequest(parsed.message));
      const { include: _include, ...live } = query as Record<string, unknown>;
      // The starting point is read before the feed's: no row is compared with a later point than its own start.
      const start =
        parsed.value.include === 'changes'
          ? history
            ? await history.startOf(parsed.value, lastEventId)
            : fail(errors.unavailable('This service keeps no history: include=changes is not available here.'))
          : undefined;
      const feed = await projects.changes(live, lastEventId);
      if (!feed.ok) return feed;
      if (start && !start.ok) return start;
      if (start) {
        // A store without a complete history answers this now, before the stream opens.
        const usable = await history!.changedSince(start.value, []);
        if (!usable.ok) return usable;
      }
      if (commits.closed.aborted)
        return fail(errors.unavailable('The service is shutting down; reconnect shortly.', 1));
      const open = openByKey.get(keyId) ?? 0;
      if (open >= MAX_OPEN_STREAMS_PER_KEY) {
        return fail(
          errors.rateLimited(
            5,
            `At most ${MAX_OPEN_STREAMS_PER_KEY} change streams may be open per API key; close one (or reconnect once it has ended) and retry.`,
          ),
        );
      }
      openByKey.set(keyId, open + 1);
      total += 1;
      let closed = false;
      const hold = keys?.hold(holder.authorization);
      return ok({
        events: events(feed.value, start?.value, signal, hold),
        close() {
          if (closed) return;
          closed = true;
          hold?.release();
          total -= 1;
          const left = (openByKey.get(keyId) ?? 1) - 1;
          if (left > 0) openByKey.set(keyId, left);
          else openByKey.delete(keyId);
        },
      });
    },
    openCount: () => total,
  };
}
