import type { z } from 'zod';
import type { EventLog } from '../eventstore/port.ts';
import { CONTEXTS_COLLECTION, contextsProjector, emptyContext, type StoredContext } from '../projectors/contexts.ts';
import { PROJECTS_COLLECTION, projectsProjector, type ProjectState, isPublicProject } from '../projectors/projects.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import {
  BOARD_PAGE_SIZE,
  type BoardPage,
  type Project,
  type ProjectContext,
  type SyncPage,
} from '../readmodels/schemas.ts';
import type { Access, HeldKeys } from './access.ts';
import type { Caller } from './caller.ts';
import type { CommitWatch } from './commit-watch.ts';
import { isoClock } from './clock.ts';
import { echoed, errors, fail, ok, type Result } from './errors.ts';
import { foldAsOf, readProjectStream } from './as-of-fold.ts';
import { parseParams } from './requests/params.ts';
import type { BodyCache, CacheVersion } from './body-cache.ts';
import { jsonBody, storedJson, storedJsonList, withReadAt, type JsonBody } from './json-body.ts';
import { createProjectDeltas, facetsFor, filterName, type ChangeFeed, type WaitOptions } from './project-deltas.ts';
import {
  projectParamsSchema,
  projectQuerySchema,
  projectsQuerySchema,
  syncQuerySchema,
  type ProjectsQuery,
} from './requests/projects.ts';

// The delta reads' types, named here too for the services that take them with ProjectsService.
export { deltaCursorSchema, type ChangeFeed, type WaitOptions } from './project-deltas.ts';

export type ProjectRead = { project: Project; context?: ProjectContext };

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
  const { delta, changes } = createProjectDeltas({ log, store, commits, keys, readAtNow, cachedRead });

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
