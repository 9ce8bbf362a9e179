import { z } from 'zod';
import type { EventLog, RecordedEvent } from '../eventstore/port.ts';
import type { Projector } from '../projectors/projector.ts';
import { projectsProjector, type ProjectState, isPublicProject } from '../projectors/projects.ts';
import { foldEvents } from '../projectors/runner.ts';
import type { StoredDoc } from '../readmodels/port.ts';
import {
  HISTORY_LIMIT_DEFAULT,
  type Project,
  type ProjectFieldChange,
  type ProjectHistory,
  type ProjectWrite,
} from '../readmodels/schemas.ts';
import { eventsFor, readProjectStream } from './as-of-fold.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { differingFields } from './differing-fields.ts';
import { echoed, errors, fail, ok, type Result } from './errors.ts';
import type { ProjectsService } from './projects.ts';
import { historyParamsSchema, historyQuerySchema } from './requests/history.ts';
import { parseParams } from './requests/params.ts';

function fieldChanges(before: Project | null, after: Project): ProjectFieldChange[] {
  return differingFields(before, after).map(
    (field) => ({ field, before: before === null ? null : before[field], after: after[field] }) as ProjectFieldChange,
  );
}

/**
 * The project's writes, oldest first: the events after which its public document differed from
 * the one before. The first write is the first sighting, listing every field with
 * `before` null; events that changed nothing public (or happened before the first sighting) are
 * not writes. `seq` and `writtenAt` are those the live read model gave the same write.
 */
export function projectWrites(projectId: string, events: readonly RecordedEvent[]): ProjectWrite[] {
  const writes: ProjectWrite[] = [];
  let folded = new Map<string, StoredDoc<Project, ProjectState>>();
  let published: Project | null = null;
  for (const event of eventsFor(projectsProjector as Projector, projectId, events)) {
    const changed = foldEvents(projectsProjector, folded, [event]);
    if (changed.size === 0) continue;
    folded = changed;
    const current = changed.get(projectId) ?? null;
    if (!isPublicProject(current)) continue;
    const changes = fieldChanges(published, current.doc);
    if (changes.length === 0) continue;
    writes.push({ writtenAt: event.recordedAt, seq: event.position, type: event.type, changes });
    published = current.doc;
  }
  return writes;
}

/** History cursor: bound to the archive and the project; continues with writes older than `s`. */
const historyCursorSchema = z
  .object({ v: z.literal(1), a: z.string(), p: z.string(), s: z.number().int().min(1) })
  .strict();

export type HistoryService = {
  /** GET /v1/projects/{handle}/history: newest first, cursor-paged. */
  history(params: unknown, query: unknown): Promise<Result<ProjectHistory>>;
};

export function createHistoryService(deps: {
  log: EventLog;
  projects: ProjectsService;
  now?: () => Date;
}): HistoryService {
  const { log, projects } = deps;
  const now = deps.now ?? (() => new Date());
  return {
    async history(params, query) {
      const p = parseParams(historyParamsSchema, params);
      if (!p.ok) return fail(errors.badRequest(p.message));
      const q = parseParams(historyQuerySchema, query);
      if (!q.ok) return fail(errors.badRequest(q.message));
      const found = await projects.resolve(p.value.handle);
      if (!found) return fail(errors.notFound(`no project with id or handle '${echoed(p.value.handle)}'`));
      const projectId = found.id;
      const archive = await log.archiveId();

      let before = Number.POSITIVE_INFINITY;
      if (q.value.cursor !== undefined) {
        const decoded = decodeCursor(historyCursorSchema, q.value.cursor);
        if (!decoded.ok)
          return fail(
            errors.badRequest("parameter 'cursor' is not a history cursor this service issued; start again without it"),
          );
        if (decoded.value.a !== archive)
          return fail(errors.conflict('this cursor was issued by a different archive; start again without it'));
        if (decoded.value.p !== projectId) {
          return fail(
            errors.badRequest(
              "parameter 'cursor' belongs to another project's history; send it with that project, or start again without it",
            ),
          );
        }
        before = decoded.value.s;
      }

      const readAt = now().toISOString();
      const limit = q.value.limit ?? HISTORY_LIMIT_DEFAULT;
      const older = projectWrites(projectId, await readProjectStream(log, projectId))
        .filter((w) => w.seq < before)
        .reverse();
      const writes = older.slice(0, limit);
      const last = writes[writes.length - 1];
      const next =
        older.length > limit && last
          ? encodeCursor({ v: 1, a: archive, p: projectId, s: last.seq } satisfies z.output<typeof historyCursorSchema>)
          : null;
      return ok({ projectId, writes, next, readAt });
    },
  };
}
