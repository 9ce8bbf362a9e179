import { z } from 'zod';
import { BOARD_PAGE_SIZE, SYNC_LIMIT_DEFAULT, SYNC_LIMIT_MAX } from '../../readmodels/schemas.ts';
import { boolParam, dateTimeParam, intParam } from './params.ts';

/** `since=now`: start a sync at the current high-water mark (an empty page and its bookmark cursor). */
export const SINCE_NOW = 'now';

/** Longest long-poll, in seconds (`wait`, `waitSeconds`). */
export const WAIT_MAX_SECONDS = 30;

const waitParam = (min: number) =>
  intParam(min, WAIT_MAX_SECONDS)
    .optional()
    .describe(
      `Delta mode long-poll: when nothing was written after the starting point, hold the request up to this many seconds (${min} to ${WAIT_MAX_SECONDS}) until a write is committed (then the delta page), else answer the empty page with the same cursor. One request, however long it waits.`,
    );

/** GET /v1/projects and the list_projects / sync_projects tools. */
export const projectsQuerySchema = z
  .object({
    page: intParam(1, 1_000_000, 1)
      .optional()
      .describe(`Board mode: page number, 1-based, ${BOARD_PAGE_SIZE} projects per page, newest first.`),
    since: z
      .union([z.literal(SINCE_NOW), dateTimeParam], {
        error: `must be an ISO 8601 date-time, e.g. 2026-11-20T08:00:00Z, or '${SINCE_NOW}'`,
      })
      .optional()
      .describe(
        `Delta mode: rows the archive wrote at or after this ISO 8601 time (a write, not necessarily a material change). '${SINCE_NOW}': no rows, only a cursor at the latest write, to fetch later writes with.`,
      ),
    cursor: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .describe('Delta mode: continue from the cursor of an earlier delta page.'),
    limit: intParam(1, SYNC_LIMIT_MAX, SYNC_LIMIT_DEFAULT)
      .optional()
      .describe(`Delta mode page size: 1 to ${SYNC_LIMIT_MAX}, default ${SYNC_LIMIT_DEFAULT}.`),
    has_dossier: boolParam.optional().describe('Only projects with (true) or without (false) a research dossier.'),
    wait: waitParam(1),
  })
  .strict();

/** The sync_projects tool: delta mode, with the long-poll as `wait_seconds` (0: answer at once). */
export const syncQuerySchema = projectsQuerySchema
  .pick({ since: true, cursor: true, limit: true, has_dossier: true })
  .extend({ wait_seconds: waitParam(0) })
  .strict();

/** How much of each project a listing tool returns: every field (default), or the compact summary. */
export const projectViewSchema = z
  .enum(['full', 'summary'], { message: "must be 'full' or 'summary'" })
  .optional()
  .describe(
    "'summary' (the default): only id, handle, name, fol, firstSeenByUs, hasDossier, writtenAt, 0.1 to 0.3 of the bytes; 'full': the REST body.",
  );

/** GET /v1/projects/changes: the event stream's starting point (or the Last-Event-ID header) and filter. */
export const changesQuerySchema = projectsQuerySchema.pick({ since: true, cursor: true, has_dossier: true }).strict();

export type ProjectsQuery = z.output<typeof projectsQuerySchema>;

/** GET /v1/projects/{handle} and the get_project tool. */
export const projectParamsSchema = z
  .object({
    handle: z.string().min(1).max(200).describe('A social handle (with or without @) or the stable project id.'),
  })
  .strict();

export const projectQuerySchema = z
  .object({
    include: z
      .enum(['context'], { message: "must be 'context'" })
      .optional()
      .describe(
        "'context' adds vote counts, research status and freshness (and voter names for an allowlisted key owner).",
      ),
    asOf: dateTimeParam
      .optional()
      .describe(
        "ISO 8601 date-time: the project as it stood then, i.e. folded by the live projector code from the events the archive had recorded (recordedAt) at or before this instant. Before the project's first sighting: 404. The handle is resolved against the current board; use the id for a project whose handle has changed. With include=context the context is folded the same way (voter names still only for an allowlisted key owner).",
      ),
  })
  .strict();
