import { z } from 'zod';
import type { EventLog } from '../eventstore/port.ts';
import { contextsProjector, emptyContext } from '../projectors/contexts.ts';
import { PROJECT_FACETS, PROJECTS_COLLECTION } from '../projectors/projects.ts';
import { foldEvents } from '../projectors/runner.ts';
import type { HistoryStore, Version, VersionChange } from '../readmodels/history/port.ts';
import {
  DIFF_LIMIT_DEFAULT,
  type AsOfPoint,
  type BoardPageAsOf,
  type ChangedFields,
  type ProjectChange,
  type ProjectDiff,
  type ProjectReadAsOf,
  type ProjectSearchAsOf,
  type SyncPageChanges,
} from '../readmodels/history-schemas.ts';
import type { ReadStore } from '../readmodels/port.ts';
import { BOARD_PAGE_SIZE, type Project, type ProjectContext, type SyncPage } from '../readmodels/schemas.ts';
import type { Access } from './access.ts';
import type { Caller } from './caller.ts';
import { isoClock } from './clock.ts';
import { createLogHead, decodeCursor, encodeCursor, type LogHead } from './cursor.ts';
import { echoed, errors, fail, ok, type Result } from './errors.ts';
import { readProjectStream } from './as-of-fold.ts';
import { deltaCursorSchema, type ProjectsService, type WaitOptions } from './projects.ts';
import {
  boardQuerySchema,
  diffQuerySchema,
  projectAsOfQuerySchema,
  searchAsOfQuerySchema,
} from './requests/history-board.ts';
import { dateTimeParam, parseParams } from './requests/params.ts';
import { projectParamsSchema } from './requests/projects.ts';
import type { SearchService } from './search.ts';
import { differingFields, differingStoredFields } from './differing-fields.ts';
import { createBodyCache, type CacheVersion } from './body-cache.ts';
import { jsonBody, storedJson, storedJsonList, withReadAt, type JsonBody, type RawJson } from './json-body.ts';

/**
 * The board's past, read from the history read model (readmodels/history/port.ts): the board, a
 * project and a search as of a point, the net changes between two points, and which fields each
 * delta row changed since the request's starting point. A point is an ISO time (the last project
 * write recorded at or before it) or a delta cursor (exactly its position); every answer names the
 * point as a time and as a delta cursor, so a client pins a sequence of reads to one point.
 */

const C = PROJECTS_COLLECTION;

export type HistoryBoardService = {
  /** Whether GET /v1/projects with this query is read here (asOf or include given). */
  readsList(query: unknown): boolean;
  /** Whether GET /v1/projects/{handle} or GET /v1/search with this query is read here (asOf given). */
  readsPast(query: unknown): boolean;
  /** GET /v1/projects?asOf= (board mode) or ?include=changes (delta mode). */
  /** `options` carries the request's signal: a long-poll (include=changes with wait) ends when its client goes. */
  list(query: unknown, options?: WaitOptions): Promise<Result<JsonBody<BoardPageAsOf | SyncPageChanges>>>;
  /** GET /v1/projects/{handle}?asOf=. */
  project(caller: Caller, params: unknown, query: unknown): Promise<Result<JsonBody<ProjectReadAsOf>>>;
  /** GET /v1/search?q=&asOf=: matched on today's identifiers, the project as it stood at the point. */
  search(caller: Caller, query: unknown): Promise<Result<ProjectSearchAsOf>>;
  /** GET /v1/projects/diff. */
  diff(query: unknown): Promise<Result<JsonBody<ProjectDiff>>>;
  /** The fields in which `after` differs from the project as of position `at` (every field when it was not on the board then). */
  changedSince(at: number, rows: readonly Project[]): Promise<Result<ChangedFields[]>>;
  /** Where a delta read starting from `query`'s cursor or since stands, as a position (include=changes on the change stream). */
  startOf(query: { since?: string; cursor?: string }, lastEventId?: string): Promise<Result<number>>;
};

export type HistoryBoardDeps = {
  log: EventLog;
  store: ReadStore;
  access: Access;
  projects: ProjectsService;
  search: SearchService;
  now?: () => Date;
  /** The serving read-model generation: kept as-of pages belong to one (a replay's may differ). */
  generation?: () => number;
};

/** Bytes of rendered as-of board pages kept (a page as of a point never changes). */
const AS_OF_BODY_BYTES = 8 * 1024 * 1024;

/** Diff cursor: the archive, both points, and the last row served. */
const diffCursorSchema = z
  .object({
    v: z.literal(1),
    a: z.string(),
    f: z.number().int().min(0),
    t: z.number().int().min(0),
    s: z.number().int().min(0),
    i: z.string(),
  })
  .strict();

export type Point = { seq: number; at: string | null };

/**
 * A point given as a time or a delta cursor, as a position no later than what the read model has
 * applied, with the time of the last project write at or before it. A cursor past the log's head was
 * never issued (400); one the read model has not reached yet is 503 (`head`: the caller's kept head).
 */
export async function resolvePoint(
  deps: { log: EventLog; store: ReadStore; history: HistoryStore; archive: string; head?: LogHead },
  name: string,
  value: string,
): Promise<Result<Point>> {
  const { log, store, history } = deps;
  if (dateTimeParam.safeParse(value).success) {
    // Everything the archive recorded at or before the instant (votes and checks too, for a context),
    // up to what the read model has applied.
    const recorded = await log.positionBefore(new Date(Date.parse(value) + 1).toISOString());
    const seq = Math.min(recorded, await store.checkpoint(C, { fresh: true }));
    return ok({ seq, at: (await history.pointAtSeq(C, seq))?.writtenAt ?? null });
  }
  const decoded = decodeCursor(deltaCursorSchema, value);
  const notIssued = () =>
    fail<Point>(
      errors.badRequest(
        `parameter '${name}' must be an ISO 8601 date-time, e.g. 2026-11-20T08:00:00Z, or a delta cursor this service issued`,
      ),
    );
  if (!decoded.ok) return notIssued();
  if (decoded.value.archive !== deps.archive)
    return fail(errors.conflict(`parameter '${name}' is a cursor issued by a different archive`));
  if (decoded.value.seq > (await store.checkpoint(C, { fresh: true }))) {
    if (!(await (deps.head ?? createLogHead(log)).holds(decoded.value.seq))) return notIssued();
    return fail(
      errors.unavailable(`parameter '${name}' names a point the read model has not reached yet; retry shortly`, 1),
    );
  }
  return ok({ seq: decoded.value.seq, at: (await history.pointAtSeq(C, decoded.value.seq))?.writtenAt ?? null });
}

/** A point as answers name it: its time and a delta cursor (bookmark) at exactly its position. */
export function namedPoint(archive: string, point: Point, hasDossier?: boolean): AsOfPoint {
  const f = hasDossier === undefined ? 'all' : hasDossier ? 'dossier' : 'no_dossier';
  return {
    at: point.at,
    cursor: encodeCursor({ v: 1, a: archive, s: point.seq, i: '', f } satisfies z.input<typeof deltaCursorSchema>),
  };
}

/**
 * A diff page's rows as raw JSON: each row's `before` and `after` are the stored texts, written as
 * they are (never parsed and serialised again).
 */
function changeRows(rows: readonly VersionChange<Project>[]): RawJson<ProjectChange[]> {
  const value = () =>
    rows.map((row): ProjectChange => ({
      id: row.after.id,
      change: row.before === null ? 'added' : 'changed',
      fields: differingStoredFields(row.before, row.after),
      before: row.before?.doc ?? null,
      after: row.after.doc,
    }));
  return {
    raw: true,
    bytes: () => {
      const pieces: (Uint8Array | string)[] = ['['];
      rows.forEach((row, n) => {
        const { before, after } = row;
        const fields = JSON.stringify(differingStoredFields(row.before, row.after));
        const change = before === null ? 'added' : 'changed';
        pieces.push(
          `${n === 0 ? '' : ','}{"id":${JSON.stringify(after.id)},"change":"${change}","fields":${fields},"before":`,
        );
        pieces.push(before === null ? 'null' : before.utf8, ',"after":', after.utf8, '}');
      });
      pieces.push(']');
      return Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
    },
    value,
  };
}

export function createHistoryBoardService(deps: HistoryBoardDeps): HistoryBoardService {
  const { log, store, access, projects, search } = deps;
  const readAtNow = isoClock(deps.now);
  const generation = deps.generation ?? (() => 0);
  const head = createLogHead(log);
  // Kept from the second read on, like the live board's bodies: a walk of every page passes.
  const asOfBodies = createBodyCache({ maxBytes: AS_OF_BODY_BYTES, keepAfterMisses: 2 });
  let archive: Promise<string> | undefined;
  const archiveId = (): Promise<string> =>
    (archive ??= log.archiveId().catch((error: unknown) => {
      archive = undefined;
      throw error;
    }));

  async function historyStore(): Promise<Result<HistoryStore>> {
    const history = store.history;
    if (!history)
      return fail(errors.unavailable('This read store keeps no history: reads as of a point are not available here.'));
    const from = await history.recordedFrom(C);
    if (from > 0) {
      return fail(
        errors.unavailable(
          `The history read model of this store was started at log position ${from}, after the board had been written; an operator must run 'pulseboard replay' to build it from the beginning.`,
        ),
      );
    }
    return ok(history);
  }

  const pointOf = async (history: HistoryStore, name: string, value: string): Promise<Result<Point>> =>
    resolvePoint({ log, store, history, archive: await archiveId(), head }, name, value);

  /** The latest point: everything the read model has applied. */
  async function now(history: HistoryStore): Promise<Point> {
    const seq = await store.checkpoint(C, { fresh: true });
    return { seq, at: (await history.pointAtSeq(C, seq))?.writtenAt ?? null };
  }

  const named = async (point: Point, hasDossier?: boolean): Promise<AsOfPoint> =>
    namedPoint(await archiveId(), point, hasDossier);

  /** The point as the request named it: its time (bounded and escaped, as any echoed input), or the cursor's position. */
  const pointText = (given: string, point: Point) =>
    dateTimeParam.safeParse(given).success ? echoed(given) : `position ${point.seq}`;

  async function boardAsOf(
    history: HistoryStore,
    q: z.output<typeof boardQuerySchema>,
  ): Promise<Result<JsonBody<BoardPageAsOf>>> {
    const point = await pointOf(history, 'asOf', q.asOf!);
    if (!point.ok) return point;
    const page = q.page ?? 1;
    // A page as of an applied point depends on the generation, the point, the page and the filter only.
    const version: CacheVersion = [generation(), 0];
    const key = `${point.value.seq} ${page} ${String(q.has_dossier)}`;
    const kept = asOfBodies.get(version, key);
    if (kept) return ok(withReadAt<BoardPageAsOf>(kept, readAtNow()));
    const facets =
      q.has_dossier === undefined ? undefined : [q.has_dossier ? PROJECT_FACETS.dossier : PROJECT_FACETS.noDossier];
    const readAt = readAtNow();
    const { total, docs } = await history.list<Project>(C, point.value.seq, {
      ...(facets ? { facets } : {}),
      offset: (page - 1) * BOARD_PAGE_SIZE,
      limit: BOARD_PAGE_SIZE,
    });
    const body = jsonBody<BoardPageAsOf, 'projects'>({
      projects: storedJsonList(docs),
      page,
      pageSize: BOARD_PAGE_SIZE,
      total,
      totalPages: Math.ceil(total / BOARD_PAGE_SIZE),
      asOf: await named(point.value, q.has_dossier),
      readAt,
    });
    asOfBodies.set(version, key, body);
    return ok(body);
  }

  async function changedSince(at: number, rows: readonly Project[]): Promise<Result<ChangedFields[]>> {
    const history = await historyStore();
    if (!history.ok) return history;
    const then = await history.value.getMany<Project>(
      C,
      rows.map((r) => r.id),
      at,
    );
    return ok(rows.map((row) => ({ id: row.id, changedFields: differingFields(then.get(row.id)?.doc ?? null, row) })));
  }

  async function startOf(query: { since?: string; cursor?: string }, lastEventId?: string): Promise<Result<number>> {
    const cursor = lastEventId ?? query.cursor;
    if (cursor !== undefined) {
      const decoded = decodeCursor(deltaCursorSchema, cursor);
      return decoded.ok
        ? ok(decoded.value.seq)
        : fail(errors.badRequest("parameter 'cursor' is not a cursor this service issued; start again with 'since'"));
    }
    if (query.since === undefined || query.since === 'now') return ok(await store.checkpoint(C, { fresh: true }));
    // Rows written at or after `since` are served: the starting point is the last event recorded before it.
    return ok(await log.positionBefore(new Date(query.since).toISOString()));
  }

  async function deltaWithChanges(
    query: Record<string, unknown>,
    q: z.output<typeof boardQuerySchema>,
    options: WaitOptions,
  ): Promise<Result<JsonBody<SyncPageChanges>>> {
    const { include: _include, ...rest } = query;
    // The start is read before the page: a page never holds a row older than its starting point.
    const start = await startOf(q);
    if (!start.ok) return start;
    const page = await projects.list(rest, options);
    if (!page.ok) return page;
    const delta = page.value.value() as SyncPage;
    const changes = await changedSince(start.value, delta.projects);
    if (!changes.ok) return changes;
    return ok(jsonBody<SyncPageChanges, never>({ ...delta, changes: changes.value }));
  }

  async function contextAt(caller: Caller, project: Project, at: number, readAt: string): Promise<ProjectContext> {
    const events = (await readProjectStream(log, project.id)).filter(
      (e) =>
        e.position <= at &&
        contextsProjector.typePrefixes.some((prefix) => e.type.startsWith(prefix)) &&
        contextsProjector.keyOf(e) === project.id,
    );
    const stored = foldEvents(contextsProjector, new Map(), events).get(project.id)?.doc ?? emptyContext();
    // As the live read shows a context: voter names only for an allowlisted key owner.
    const { allowlisted } = await access.ownerAccess(caller.owner);
    return {
      votes: stored.votes,
      voters: allowlisted ? stored.voters : null,
      research: { ...stored.research, hasDossier: project.dossier !== null },
      freshness: { readAt, ...stored.freshness },
    };
  }

  return {
    readsList(query) {
      const given = query as Record<string, unknown> | null | undefined;
      return typeof given === 'object' && given !== null && (given.asOf !== undefined || given.include !== undefined);
    },

    readsPast(query) {
      const given = query as Record<string, unknown> | null | undefined;
      return typeof given === 'object' && given !== null && given.asOf !== undefined;
    },

    async list(query, options = {}) {
      const parsed = parseParams(boardQuerySchema, query);
      if (!parsed.ok) return fail(errors.badRequest(parsed.message));
      const q = parsed.value;
      const deltaMode = q.since !== undefined || q.cursor !== undefined;
      if (q.asOf !== undefined && deltaMode) {
        return fail(
          errors.badRequest("parameter 'asOf' applies to board mode (page) only; in delta mode send a cursor or since"),
        );
      }
      if (q.include !== undefined && !deltaMode)
        return fail(errors.badRequest("parameter 'include=changes' applies to delta mode (since or cursor) only"));
      if (q.asOf !== undefined && (q.limit !== undefined || q.wait !== undefined)) {
        return fail(
          errors.badRequest(
            `parameters 'limit' and 'wait' apply to delta mode only; the board has a fixed page size of ${BOARD_PAGE_SIZE}`,
          ),
        );
      }
      if (q.include !== undefined) return deltaWithChanges(query as Record<string, unknown>, q, options);
      const history = await historyStore();
      if (!history.ok) return history;
      return boardAsOf(history.value, q);
    },

    async project(caller, params, query) {
      const p = parseParams(projectParamsSchema, params);
      if (!p.ok) return fail(errors.badRequest(p.message));
      const q = parseParams(projectAsOfQuerySchema, query);
      if (!q.ok) return fail(errors.badRequest(q.message));
      const history = await historyStore();
      if (!history.ok) return history;
      const point = await pointOf(history.value, 'asOf', q.value.asOf!);
      if (!point.ok) return point;
      // The handle is resolved on today's board (an id always works for a project whose handle changed).
      const found = await projects.resolve(p.value.handle);
      if (!found) return fail(errors.notFound(`no project with id or handle '${echoed(p.value.handle)}'`));
      const version: Version<Project> | null = await history.value.get<Project>(C, found.id, point.value.seq);
      if (!version)
        return fail(
          errors.notFound(`project '${found.id}' was not yet on the board at ${pointText(q.value.asOf!, point.value)}`),
        );
      const asOf = await named(point.value);
      if (q.value.include !== 'context')
        return ok(jsonBody<ProjectReadAsOf, 'project'>({ project: storedJson(version), asOf }));
      const context = await contextAt(caller, version.doc, point.value.seq, readAtNow());
      return ok(jsonBody<ProjectReadAsOf, 'project'>({ project: storedJson(version), context, asOf }));
    },

    async search(caller, query) {
      const parsed = parseParams(searchAsOfQuerySchema, query);
      if (!parsed.ok) return fail(errors.badRequest(parsed.message));
      const { asOf: given, ...live } = parsed.value;
      const history = await historyStore();
      if (!history.ok) return history;
      const point = await pointOf(history.value, 'asOf', given!);
      if (!point.ok) return point;
      const todayBody = await search.search(caller, live);
      if (!todayBody.ok) return todayBody;
      const today = todayBody.value.value();
      const asOf = await named(point.value);
      const readAt = readAtNow();
      if (today.state !== 'found' || today.project === null)
        return ok({ ...today, project: null, context: null, asOf, readAt });
      const version = await history.value.get<Project>(C, today.project.id, point.value.seq);
      // Found today but not yet on the board then: missing at that point.
      if (!version) return ok({ state: 'missing', project: null, context: null, asOf, readAt });
      return ok({
        state: 'found',
        project: version.doc,
        context: await contextAt(caller, version.doc, point.value.seq, readAt),
        asOf,
        readAt,
      });
    },

    async diff(query) {
      const parsed = parseParams(diffQuerySchema, query);
      if (!parsed.ok) return fail(errors.badRequest(parsed.message));
      const q = parsed.value;
      const history = await historyStore();
      if (!history.ok) return history;
      let from: Point;
      let to: Point;
      let after: { seq: number; id: string } | undefined;
      if (q.cursor !== undefined) {
        if (q.from !== undefined || q.to !== undefined)
          return fail(errors.badRequest("send either 'from' and 'to' (to start) or 'cursor' (to continue), not both"));
        const decoded = decodeCursor(diffCursorSchema, q.cursor);
        if (!decoded.ok)
          return fail(
            errors.badRequest("parameter 'cursor' is not a diff cursor this service issued; start again with 'from'"),
          );
        if (decoded.value.a !== (await archiveId()))
          return fail(errors.conflict("this cursor was issued by a different archive; start again with 'from'"));
        from = { seq: decoded.value.f, at: (await history.value.pointAtSeq(C, decoded.value.f))?.writtenAt ?? null };
        to = { seq: decoded.value.t, at: (await history.value.pointAtSeq(C, decoded.value.t))?.writtenAt ?? null };
        after = { seq: decoded.value.s, id: decoded.value.i };
      } else {
        if (q.from === undefined)
          return fail(errors.badRequest("parameter 'from' must be given (or 'cursor' to continue)"));
        const start = await pointOf(history.value, 'from', q.from);
        if (!start.ok) return start;
        const end = q.to === undefined ? ok(await now(history.value)) : await pointOf(history.value, 'to', q.to);
        if (!end.ok) return end;
        from = start.value;
        to = end.value;
        if (from.seq > to.seq) return fail(errors.badRequest("parameter 'from' names a later point than 'to'"));
      }
      const limit = q.limit ?? DIFF_LIMIT_DEFAULT;
      const readAt = readAtNow();
      const rows = await history.value.changes<Project>(C, {
        from: from.seq,
        to: to.seq,
        ...(after ? { after } : {}),
        limit: limit + 1,
      });
      const served = rows.slice(0, limit);
      const last = served[served.length - 1]?.after;
      const next =
        rows.length > limit && last
          ? encodeCursor({
              v: 1,
              a: await archiveId(),
              f: from.seq,
              t: to.seq,
              s: last.seq,
              i: last.id,
            } satisfies z.output<typeof diffCursorSchema>)
          : null;
      const body = jsonBody<ProjectDiff, 'changes'>({
        from: await named(from),
        to: await named(to),
        changes: changeRows(served),
        next,
        readAt,
      });
      // A page with more rows names the request for them: its `next` (which pins both points) and the same limit.
      return ok(next === null ? body : { ...body, continuation: { cursor: next, limit: String(limit) } });
    },

    changedSince,
    startOf,
  };
}
