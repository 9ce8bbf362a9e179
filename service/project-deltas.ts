import { z } from 'zod';
import type { EventLog } from '../eventstore/port.ts';
import { PROJECTS_COLLECTION, PUBLIC_PROJECT_FACETS, PROJECT_FACETS } from '../projectors/projects.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import { SYNC_LIMIT_DEFAULT, type Project, type SyncPage } from '../readmodels/schemas.ts';
import type { HeldKeys, KeyHold } from './access.ts';
import type { CommitWatch, WaitOutcome } from './commit-watch.ts';
import { createLogHead, decodeCursor, encodeCursor } from './cursor.ts';
import { errors, fail, ok, type Result } from './errors.ts';
import { parseParams } from './requests/params.ts';
import { jsonBody, storedJsonList, withReadAt, type JsonBody } from './json-body.ts';
import { SINCE_NOW, changesQuerySchema, type ProjectsQuery } from './requests/projects.ts';

/** One written row of the change stream: its Project JSON as stored and the delta cursor after it. */
export type ChangeRow = { cursor: string; json: string };

/** The change stream's reads from one starting point; each `next` continues where the last ended. */
export type ChangeFeed = {
  /** The next rows in delta order (at most `limit`), up to the committed checkpoint `upToSeq`. */
  next(limit: number): Promise<{ rows: ChangeRow[]; hasMore: boolean; upToSeq: number }>;
};

/**
 * A long-poll ends early when `signal` aborts (the client went away). `authorization`: the credential
 * the request was admitted with, checked again while it waits and before it answers after a wait.
 */
export type WaitOptions = { signal?: AbortSignal; authorization?: string | undefined };

/**
 * Delta cursor: archive id, last (seq, id) served, and the filter it was minted under. One-letter keys
 * on the wire (v version, a archive, s seq, i id, f filter) keep it short; read by name.
 */
export const deltaCursorSchema = z
  .object({
    v: z.literal(1),
    a: z.string(),
    s: z.number().int().min(0),
    i: z.string(),
    f: z.enum(['all', 'dossier', 'no_dossier']),
  })
  .strict()
  .transform((wire) => ({ archive: wire.a, seq: wire.s, id: wire.i, filter: wire.f }));
export type DeltaCursor = z.output<typeof deltaCursorSchema>;
/** The refusal of a cursor that does not decode, or names a position past the log's head. */
const NOT_ISSUED = (name: string) => `${name} is not a cursor this service issued; start again with 'since'`;

/** Where a delta read stands: the last (seq, id) served; an empty id is a bookmark at seq. */
type Position = { seq: number; id: string };

/** The facets a has_dossier filter reads (the board's and the deltas' alike). */
export function facetsFor(hasDossier: boolean | undefined): readonly string[] {
  if (hasDossier === undefined) return PUBLIC_PROJECT_FACETS;
  return [hasDossier ? PROJECT_FACETS.dossier : PROJECT_FACETS.noDossier];
}

/** The filter's name in a cursor and in a cached body's key. */
export function filterName(hasDossier: boolean | undefined): DeltaCursor['filter'] {
  if (hasDossier === undefined) return 'all';
  return hasDossier ? 'dossier' : 'no_dossier';
}

/** A read kept in the body cache under the projects read model's checkpoint (createProjectsService's cachedRead). */
export type CachedRead = <T>(key: string, read: () => Promise<Result<JsonBody<T>>>) => Promise<Result<JsonBody<T>>>;

export type ProjectDeltas = {
  /** A delta page (GET /v1/projects with since or cursor, sync_projects), long-polling when `wait` is given. */
  delta(q: ProjectsQuery, options?: WaitOptions): Promise<Result<JsonBody<SyncPage>>>;
  /** The change stream from the query's starting point, or from `lastEventId` when reconnecting. */
  changes(query: unknown, lastEventId?: string): Promise<Result<ChangeFeed>>;
};

/**
 * The projects' delta reads: pages after a cursor or a time, their long-poll, and the change stream,
 * each from the read model up to its committed checkpoint.
 */
export function createProjectDeltas(deps: {
  log: EventLog;
  store: ReadStore;
  commits?: CommitWatch | undefined;
  keys?: HeldKeys | undefined;
  readAtNow: () => string;
  cachedRead: CachedRead;
}): ProjectDeltas {
  const { log, store, commits, keys, readAtNow, cachedRead } = deps;
  const head = createLogHead(log);
  // An event log's archive id is stable across calls and connections (the log contract): read once.
  let archive: Promise<string> | undefined;
  const archiveId = (): Promise<string> =>
    (archive ??= log.archiveId().catch((error: unknown) => {
      archive = undefined;
      throw error;
    }));

  /** Where a delta read starts, once the query's starting point is checked against this archive and filter. */
  type DeltaStart = {
    archive: string;
    filter: DeltaCursor['filter'];
    start: { after: Position } | { fromWrittenAt: string };
  };

  async function deltaStart(q: ProjectsQuery, lastEventId?: string): Promise<Result<DeltaStart>> {
    if (q.since !== undefined && q.cursor !== undefined) {
      return fail(errors.badRequest("send either 'since' (to start) or 'cursor' (to continue), not both"));
    }
    const archive = await archiveId();
    const filter = filterName(q.has_dossier);
    // A reconnecting event stream resumes where it stopped, whatever its URL started from.
    const cursor = lastEventId ?? q.cursor;
    const name = lastEventId !== undefined ? "header 'Last-Event-ID'" : "parameter 'cursor'";
    if (cursor !== undefined) {
      const decoded = decodeCursor(deltaCursorSchema, cursor);
      if (!decoded.ok) return fail(errors.badRequest(NOT_ISSUED(name)));
      if (decoded.value.archive !== archive) {
        return fail(errors.conflict("this cursor was issued by a different archive; start again with 'since'"));
      }
      if (decoded.value.filter !== filter) {
        return fail(
          errors.badRequest(
            `${name} was issued with a different has_dossier filter; send the same has_dossier as when it was issued, or start again with 'since'`,
          ),
        );
      }
      return ok({ archive, filter, start: { after: { seq: decoded.value.seq, id: decoded.value.id } } });
    }
    if (q.since === SINCE_NOW)
      return ok({ archive, filter, start: { after: { seq: await store.checkpoint(PROJECTS_COLLECTION), id: '' } } });
    if (q.since !== undefined)
      return ok({ archive, filter, start: { fromWrittenAt: new Date(q.since).toISOString() } });
    // No starting point: the beginning of the archive (sync_projects only; REST's list is board mode then).
    return ok({ archive, filter, start: { after: { seq: 0, id: '' } } });
  }

  /** `ahead`: the read started past the committed checkpoint (a cursor from a read model further on, or never issued). */
  type DeltaRead = {
    rows: StoredDoc<Project>[];
    hasMore: boolean;
    upToSeq: number;
    position: Position;
    ahead: boolean;
  };

  /** One delta read from `from`: the rows served, and the position after them (the bookmark once everything was served). */
  async function readDelta(from: DeltaStart, hasDossier: boolean | undefined, limit: number): Promise<DeltaRead> {
    const { start } = from;
    // Served only up to the committed checkpoint, so a page never shows a later write before an earlier one.
    const upToSeq = await store.checkpoint(PROJECTS_COLLECTION);
    // A cursor with no id is a bookmark: everything at its seq was seen already (since=now marks the
    // latest write, which may be a project row), so the read starts at the next seq.
    const storeStart =
      'after' in start && start.after.id === '' ? { after: { seq: start.after.seq + 1, id: '' } } : start;
    const rows = await store.delta<Project>(PROJECTS_COLLECTION, {
      start: storeStart,
      upToSeq,
      facets: facetsFor(hasDossier),
      limit: limit + 1,
    });
    const hasMore = rows.length > limit;
    const served = rows.slice(0, limit);
    const last = served[served.length - 1];
    let position: Position;
    if (last) position = { seq: last.seq, id: last.id };
    else if ('after' in start) position = start.after;
    else position = { seq: 0, id: '' };
    // Once everything up to the high-water mark was served, the bookmark can move there.
    if (!hasMore && position.seq < upToSeq) position = { seq: upToSeq, id: '' };
    return { rows: served, hasMore, upToSeq, position, ahead: 'after' in start && start.after.seq > upToSeq };
  }

  /**
   * Identical delta reads in flight share one store read: the long-polls a commit wakes mostly hold
   * the same bookmark (every caught-up mirror has the same cursor), so a commit costs one read per
   * distinct cursor, not one per waiter. A read is shared only while it runs, so none is stale.
   */
  const inFlight = new Map<string, Promise<DeltaRead>>();
  function sharedDelta(from: DeltaStart, hasDossier: boolean | undefined, limit: number): Promise<DeltaRead> {
    const key = JSON.stringify([from.start, from.filter, limit]);
    let read = inFlight.get(key);
    if (!read) {
      read = readDelta(from, hasDossier, limit).finally(() => inFlight.delete(key));
      inFlight.set(key, read);
    }
    return read;
  }

  /**
   * Whether a start past the committed checkpoint lies within the log (the read models will get there)
   * rather than past its head, where no cursor this service issued can lie. Asked only for such starts.
   */
  const issued = async (from: DeltaStart): Promise<boolean> =>
    !('after' in from.start) || (await head.holds(from.start.after.seq));

  const cursorAt = (from: DeltaStart, position: Position): string =>
    encodeCursor({ v: 1, a: from.archive, s: position.seq, i: position.id, f: from.filter } satisfies z.input<
      typeof deltaCursorSchema
    >);

  async function delta(q: ProjectsQuery, options: WaitOptions = {}): Promise<Result<JsonBody<SyncPage>>> {
    const from = await deltaStart(q);
    if (!from.ok) return from;
    const limit = q.limit ?? SYNC_LIMIT_DEFAULT;
    if (q.since === SINCE_NOW && q.wait === undefined) {
      // A bookmark only: everything up to the high-water mark counts as already seen.
      const cursor = cursorAt(from.value, { seq: (from.value.start as { after: Position }).after.seq, id: '' });
      return ok(jsonBody<SyncPage, never>({ projects: [], cursor, hasMore: false, limit, readAt: readAtNow() }));
    }
    // A page without a wait depends on the read model and its starting point alone.
    if (q.wait === undefined) {
      return cachedRead(`delta ${JSON.stringify([from.value.start, from.value.filter, limit])}`, () =>
        deltaPage(from.value, q, limit),
      );
    }
    return deltaPage(from.value, q, limit, options);
  }

  async function deltaPage(
    from: DeltaStart,
    q: ProjectsQuery,
    limit: number,
    options: WaitOptions = {},
  ): Promise<Result<JsonBody<SyncPage>>> {
    // Long-poll: an empty page waits for a commit past what it read, until `wait` seconds have passed.
    const deadline = performance.now() + (q.wait ?? 0) * 1000;
    let read: DeltaRead;
    let readAt: string;
    // Held only once it waits: the key was checked at admission, and a page answered at once needs no other check.
    let hold: KeyHold | undefined;
    let outcome: WaitOutcome | undefined;
    try {
      for (;;) {
        readAt = readAtNow();
        read = await sharedDelta(from, q.has_dossier, limit);
        if (read.ahead && !(await issued(from))) return fail(errors.badRequest(NOT_ISSUED("parameter 'cursor'")));
        const remaining = deadline - performance.now();
        if (read.rows.length > 0 || read.hasMore || remaining <= 0 || !commits) break;
        if (keys && options.authorization !== undefined) hold ??= keys.hold(options.authorization);
        // A commit past the high-water mark may hold no row this filter serves: then read and wait again.
        const signals = [options.signal, hold?.revoked].filter((s): s is AbortSignal => s !== undefined);
        const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
        outcome = await commits.waitPast(read.upToSeq, { timeoutMs: remaining, ...(signal ? { signal } : {}) });
        if (outcome !== 'passed') break;
      }
      // A key revoked or expired while the request waited gets nothing written meanwhile (at shutdown the
      // page is the empty one read before the wait, and the key store may be closing).
      if (hold && (hold.revoked.aborted || (outcome !== 'closed' && !(await hold.check()))))
        return fail(errors.unauthorized());
    } finally {
      hold?.release();
    }
    return ok(withReadAt(pageOf(from, read, limit, readAt), readAt));
  }

  /**
   * The page of a read, made once for every long-poll that shared it (the waiters one commit wakes):
   * each gets the same bytes with its own readAt, not a cursor, a body and a validator of its own.
   * Everything else the page holds is the read's key (start, filter, limit) or the log's archive.
   */
  const pages = new WeakMap<DeltaRead, JsonBody<SyncPage>>();
  function pageOf(from: DeltaStart, read: DeltaRead, limit: number, readAt: string): JsonBody<SyncPage> {
    const made = pages.get(read);
    if (made) return made;
    const cursor = cursorAt(from, read.position);
    const body = jsonBody<SyncPage, 'projects'>({
      projects: storedJsonList(read.rows),
      cursor,
      hasMore: read.hasMore,
      limit,
      readAt,
    });
    // Only a page with more to read now names its follower (the cursor carries the filter).
    const page = read.hasMore ? { ...body, continuation: { cursor, limit: String(limit) } } : body;
    pages.set(read, page);
    return page;
  }

  async function changes(query: unknown, lastEventId?: string): Promise<Result<ChangeFeed>> {
    const parsed = parseParams(changesQuerySchema, query);
    if (!parsed.ok) return fail(errors.badRequest(parsed.message));
    const q = parsed.value;
    if (lastEventId === undefined && q.since === undefined && q.cursor === undefined) {
      return fail(
        errors.badRequest(
          "send 'cursor' (to continue), 'since' (to start, or 'now' for new writes only) or the Last-Event-ID header (to resume)",
        ),
      );
    }
    // On reconnect, Last-Event-ID replaces whatever starting point the URL still carries.
    const from = await deltaStart(lastEventId === undefined ? q : { has_dossier: q.has_dossier }, lastEventId);
    if (!from.ok) return from;
    // Refused when the stream opens, as a delta page refuses it (one checkpoint read per stream opened).
    const start = from.value.start;
    if (
      'after' in start &&
      start.after.seq > (await store.checkpoint(PROJECTS_COLLECTION)) &&
      !(await issued(from.value))
    )
      return fail(
        errors.badRequest(NOT_ISSUED(lastEventId !== undefined ? "header 'Last-Event-ID'" : "parameter 'cursor'")),
      );
    let position = from.value;
    return ok({
      async next(limit) {
        const read = await sharedDelta(position, q.has_dossier, limit);
        const rows = read.rows.map((row) => ({
          cursor: cursorAt(position, { seq: row.seq, id: row.id }),
          json: row.json,
        }));
        position = { ...position, start: { after: read.position } };
        return { rows, hasMore: read.hasMore, upToSeq: read.upToSeq };
      },
    });
  }

  return { delta, changes };
}
