import { z } from 'zod';
import type { EventLog } from '../eventstore/port.ts';
import { CONTEXTS_COLLECTION, contextsProjector, emptyContext, type StoredContext } from '../projectors/contexts.ts';
import {
  PROJECTS_COLLECTION,
  PUBLIC_PROJECT_FACETS,
  PROJECT_FACETS,
  projectsProjector,
  type ProjectState,
  isPublicProject,
} from '../projectors/projects.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import {
  BOARD_PAGE_SIZE,
  SYNC_LIMIT_DEFAULT,
  type BoardPage,
  type Project,
  type ProjectContext,
  type SyncPage,
} from '../readmodels/schemas.ts';
import type { Access, HeldKeys, KeyHold } from './access.ts';
import type { Caller } from './caller.ts';
import type { CommitWatch, WaitOutcome } from './commit-watch.ts';
import { isoClock } from './clock.ts';
import { createLogHead, decodeCursor, encodeCursor } from './cursor.ts';
import { echoed, errors, fail, ok, type Result } from './errors.ts';
import { foldAsOf, readProjectStream } from './as-of-fold.ts';
import { parseParams } from './requests/params.ts';
import type { BodyCache, CacheVersion } from './body-cache.ts';
import { jsonBody, storedJson, storedJsonList, withReadAt, type JsonBody } from './json-body.ts';
import {
  SINCE_NOW,
  changesQuerySchema,
  projectParamsSchema,
  projectQuerySchema,
  projectsQuerySchema,
  syncQuerySchema,
  type ProjectsQuery,
} from './requests/projects.ts';

export type ProjectRead = { project: Project; context?: ProjectContext };

/** One written row of the change stream: its Project JSON as stored and the delta cursor after it. */
export type ChangeRow = { cursor: string; json: string };

/** The change stream's reads from one starting point; each `next` continues where the last ended. */
export type ChangeFeed = {
  /** The next rows in delta order (at most `limit`), up to the committed checkpoint `upToSeq`. */
  next(limit: number): Promise<{ rows: ChangeRow[]; hasMore: boolean; upToSeq: number }>;
};

export type ProjectsService = {
  /** GET /v1/projects: board mode (page) or delta mode (since / cursor). */
  list(query: unknown, options?: WaitOptions): Promise<Result<JsonBody<BoardPage | SyncPage>>>;
  /** Delta mode only (the sync_projects tool); with neither `since` nor `cursor`, from the beginning of the archive. */
  sync(query: unknown, options?: WaitOptions): Promise<Result<JsonBody<SyncPage>>>;
  /** GET /v1/projects/changes: validates the starting point (the query, or `lastEventId` when reconnecting). */
  changes(query: unknown, lastEventId?: string): Promise<Result<ChangeFeed>>;
  /** GET /v1/projects/{handle}[?include=context]. */
  get(caller: Caller, params: unknown, query: unknown): Promise<Result<JsonBody<ProjectRead>>>;
  /** Whether a get with this query is an enriched read (include=context or asOf; rate protection treats it as protected). */
  isEnriched(query: unknown): boolean;
  /** Handles of public projects starting with `prefix` (lower-cased, without @), at most `limit`, in order: completion. */
  handlesByPrefix(prefix: string, limit: number): Promise<string[]>;
  /** The public project behind an id or handle, or null. Used by other services (asks, search). */
  resolve(handleOrId: string): Promise<StoredDoc<Project, ProjectState> | null>;
  /** Context of a project as the caller may see it (voters only for an allowlisted owner). */
  contextFor(caller: Caller, project: Project, readAt: string): Promise<ProjectContext>;
};

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
type DeltaCursor = z.output<typeof deltaCursorSchema>;
/** The refusal of a cursor that does not decode, or names a position past the log's head. */
const NOT_ISSUED = (name: string) => `${name} is not a cursor this service issued; start again with 'since'`;

/** Where a delta read stands: the last (seq, id) served; an empty id is a bookmark at seq. */
type Position = { seq: number; id: string };

function facetsFor(hasDossier: boolean | undefined): readonly string[] {
  if (hasDossier === undefined) return PUBLIC_PROJECT_FACETS;
  return [hasDossier ? PROJECT_FACETS.dossier : PROJECT_FACETS.noDossier];
}

function filterName(hasDossier: boolean | undefined): DeltaCursor['filter'] {
  if (hasDossier === undefined) return 'all';
  return hasDossier ? 'dossier' : 'no_dossier';
}

/** A project's context as a caller sees it: voter names only for an allowlisted owner; `readAt` the time of the read. */
export function shownContext(
  project: Project,
  stored: StoredContext,
  allowlisted: boolean,
  readAt: string,
): ProjectContext {
  return {
    votes: stored.votes,
    voters: allowlisted ? stored.voters : null,
    research: { ...stored.research, hasDossier: project.dossier !== null },
    freshness: { readAt, ...stored.freshness },
  };
}

/**
 * A long-poll ends early when `signal` aborts (the client went away). `authorization`: the credential
 * the request was admitted with, checked again while it waits and before it answers after a wait.
 */
export type WaitOptions = { signal?: AbortSignal; authorization?: string | undefined };

export type ProjectsDeps = {
  log: EventLog;
  store: ReadStore;
  access: Access;
  commits?: CommitWatch;
  /** Re-checks the key of a held long-poll; without it a long-poll is not checked after admission (tests). */
  keys?: HeldKeys;
  now?: () => Date;
  /**
   * Rendered bodies of the reads that depend on the projects read model and the query alone (board
   * pages, delta pages without a wait, a project without context or asOf), kept while the read
   * model's checkpoint is unchanged; none when absent.
   */
  bodies?: BodyCache;
  /** The serving read-model generation (a replay's new generation may hold other bytes at the same checkpoint). */
  generation?: () => number;
};

export function createProjectsService(deps: ProjectsDeps): ProjectsService {
  const { log, store, access, commits, bodies, keys } = deps;
  const readAtNow = isoClock(deps.now);
  const generation = deps.generation ?? (() => 0);
  const head = createLogHead(log);
  // An event log's archive id is stable across calls and connections (the log contract): read once.
  let archive: Promise<string> | undefined;
  const archiveId = (): Promise<string> =>
    (archive ??= log.archiveId().catch((error: unknown) => {
      archive = undefined;
      throw error;
    }));

  /**
   * A caller-independent read through the body cache: the version is read before the data, so the
   * data kept under it is never older than it (a commit in between only makes it newer).
   */
  async function cachedRead<T>(key: string, read: () => Promise<Result<JsonBody<T>>>): Promise<Result<JsonBody<T>>> {
    if (!bodies) return read();
    const version: CacheVersion = [generation(), await store.checkpoint(PROJECTS_COLLECTION)];
    const cached = bodies.get(version, key);
    if (cached) return ok(withReadAt<T>(cached, readAtNow()));
    const result = await read();
    if (result.ok) bodies.set(version, key, result.value);
    return result;
  }

  async function board(q: ProjectsQuery): Promise<Result<JsonBody<BoardPage>>> {
    if (q.limit !== undefined) {
      return fail(
        errors.badRequest(
          `parameter 'limit' applies to delta mode (since or cursor) only; the board has a fixed page size of ${BOARD_PAGE_SIZE}`,
        ),
      );
    }
    const page = q.page ?? 1;
    return cachedRead(`board ${page} ${filterName(q.has_dossier)}`, () => boardPage(page, q.has_dossier));
  }

  async function boardPage(page: number, hasDossier: boolean | undefined): Promise<Result<JsonBody<BoardPage>>> {
    const facets = facetsFor(hasDossier);
    const readAt = readAtNow();
    // The total and the rows from one snapshot: a commit between them would answer a total that is not the page's.
    const { total, docs } = await store.list<Project>(PROJECTS_COLLECTION, {
      facets,
      offset: (page - 1) * BOARD_PAGE_SIZE,
      limit: BOARD_PAGE_SIZE,
    });
    return ok(
      jsonBody<BoardPage, 'projects'>({
        projects: storedJsonList(docs),
        page,
        pageSize: BOARD_PAGE_SIZE,
        total,
        totalPages: Math.ceil(total / BOARD_PAGE_SIZE),
        readAt,
      }),
    );
  }

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
    const cursor = cursorAt(from, read.position);
    const page = jsonBody<SyncPage, 'projects'>({
      projects: storedJsonList(read.rows),
      cursor,
      hasMore: read.hasMore,
      limit,
      readAt,
    });
    // Only a page with more to read now names its follower (the cursor carries the filter).
    return ok(read.hasMore ? { ...page, continuation: { cursor, limit: String(limit) } } : page);
  }

  async function resolve(handleOrId: string): Promise<StoredDoc<Project, ProjectState> | null> {
    const byId = await store.get<Project, ProjectState>(PROJECTS_COLLECTION, handleOrId);
    if (isPublicProject(byId)) return byId;
    const handle = handleOrId.replace(/^@/, '').toLowerCase();
    if (handle === '') return null;
    const candidates = (await store.findDocs<Project, ProjectState>(PROJECTS_COLLECTION, 'handle', handle, 100)).filter(
      isPublicProject,
    );
    // A reused handle resolves to the project that claimed it most recently.
    candidates.sort(
      (a, b) => (b.state.handleClaimedAt ?? -1) - (a.state.handleClaimedAt ?? -1) || (a.id < b.id ? 1 : -1),
    );
    return candidates[0] ?? null;
  }

  async function handlesByPrefix(prefix: string, limit: number): Promise<string[]> {
    const wanted = prefix.replace(/^@/, '').toLowerCase().slice(0, 200);
    // Bounded: a few times the answer, as a handle may be held by a project that is not served yet.
    const pairs = await store.findKeysByPrefix(PROJECTS_COLLECTION, 'handle', wanted, limit * 3);
    const docs = await store.getMany<Project, ProjectState>(PROJECTS_COLLECTION, [
      ...new Set(pairs.map((pair) => pair.id)),
    ]);
    const handles = new Set<string>();
    for (const pair of pairs)
      if (handles.size < limit && isPublicProject(docs.get(pair.id) ?? null)) handles.add(pair.value);
    return [...handles];
  }

  async function contextFor(caller: Caller, project: Project, readAt: string): Promise<ProjectContext> {
    const stored = (await store.get<StoredContext>(CONTEXTS_COLLECTION, project.id))?.doc ?? emptyContext();
    return contextFrom(caller, project, stored, readAt);
  }

  async function contextFrom(
    caller: Caller,
    project: Project,
    stored: StoredContext,
    readAt: string,
  ): Promise<ProjectContext> {
    const { allowlisted } = await access.ownerAccess(caller.owner);
    return shownContext(project, stored, allowlisted, readAt);
  }

  /**
   * The project as it stood at `at`: its stream folded by the projectors' own code up to the
   * events recorded by then. The id comes from the live read model (an id first, then a handle).
   */
  async function asOf(
    caller: Caller,
    projectId: string,
    at: string,
    withContext: boolean,
  ): Promise<Result<JsonBody<ProjectRead>>> {
    const atMs = Date.parse(at);
    const events = await readProjectStream(log, projectId);
    const project = foldAsOf(projectsProjector, projectId, events, atMs);
    if (!isPublicProject(project))
      return fail(errors.notFound(`project '${projectId}' was not yet on the board at ${echoed(at)}`));
    if (!withContext) return ok(jsonBody<ProjectRead, never>({ project: project.doc }));
    const context = foldAsOf(contextsProjector, projectId, events, atMs)?.doc ?? emptyContext();
    const read = { project: project.doc, context: await contextFrom(caller, project.doc, context, readAtNow()) };
    return ok(jsonBody<ProjectRead, never>(read));
  }

  async function list(query: unknown, options: WaitOptions = {}): Promise<Result<JsonBody<BoardPage | SyncPage>>> {
    const parsed = parseParams(projectsQuerySchema, query);
    if (!parsed.ok) return fail(errors.badRequest(parsed.message));
    const q = parsed.value;
    const deltaMode = q.since !== undefined || q.cursor !== undefined;
    if (deltaMode && q.page !== undefined) {
      return fail(
        errors.badRequest("parameter 'page' (board mode) cannot be combined with 'since' or 'cursor' (delta mode)"),
      );
    }
    if (!deltaMode && q.wait !== undefined) {
      return fail(
        errors.badRequest(
          "parameter 'wait' applies to delta mode (since or cursor) only: the board has nothing to wait for",
        ),
      );
    }
    return deltaMode ? delta(q, options) : board(q);
  }

  async function sync(query: unknown, options: WaitOptions = {}): Promise<Result<JsonBody<SyncPage>>> {
    const parsed = parseParams(syncQuerySchema, query);
    if (!parsed.ok) return fail(errors.badRequest(parsed.message));
    const { wait_seconds: waitSeconds, ...rest } = parsed.value;
    return delta({ ...rest, ...(waitSeconds ? { wait: waitSeconds } : {}) }, options);
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

  async function get(caller: Caller, params: unknown, query: unknown): Promise<Result<JsonBody<ProjectRead>>> {
    const p = parseParams(projectParamsSchema, params);
    if (!p.ok) return fail(errors.badRequest(p.message));
    const q = parseParams(projectQuerySchema, query);
    if (!q.ok) return fail(errors.badRequest(q.message));
    const handle = p.value.handle;
    if (q.value.asOf === undefined && q.value.include !== 'context') {
      return cachedRead(`project ${handle}`, async () => {
        const found = await resolve(handle);
        if (!found) return fail(errors.notFound(`no project with id or handle '${echoed(handle)}'`));
        return ok(jsonBody<ProjectRead, 'project'>({ project: storedJson(found) }));
      });
    }
    return enrichedOrPast(caller, handle, q.value);
  }

  async function enrichedOrPast(
    caller: Caller,
    handle: string,
    q: z.infer<typeof projectQuerySchema>,
  ): Promise<Result<JsonBody<ProjectRead>>> {
    const found = await resolve(handle);
    if (!found) return fail(errors.notFound(`no project with id or handle '${echoed(handle)}'`));
    if (q.asOf !== undefined) return asOf(caller, found.id, q.asOf, q.include === 'context');
    if (q.include !== 'context') return ok(jsonBody<ProjectRead, 'project'>({ project: storedJson(found) }));
    const readAt = readAtNow();
    return ok(
      jsonBody<ProjectRead, 'project'>({
        project: storedJson(found),
        context: await contextFor(caller, found.doc, readAt),
      }),
    );
  }

  return {
    list,
    sync,
    changes,

    isEnriched(query) {
      // Neither parameter given: a plain read (no parse needed to say so).
      const given = query as Record<string, unknown> | null | undefined;
      if (typeof given === 'object' && given !== null && given.include === undefined && given.asOf === undefined)
        return false;
      const parsed = parseParams(projectQuerySchema, query);
      // As-of reads fold the project's stream on every request: protected like include=context.
      return parsed.ok && (parsed.value.include === 'context' || parsed.value.asOf !== undefined);
    },

    get,

    resolve,
    handlesByPrefix,
    contextFor,
  };
}
