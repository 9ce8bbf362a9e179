import { z } from 'zod';
import { DIFF_LIMIT_DEFAULT, DIFF_LIMIT_MAX } from '../../readmodels/history-schemas.ts';
import { CURSOR_MAX } from '../../readmodels/schemas.ts';
import { intParam } from './params.ts';
import { changesQuerySchema, projectQuerySchema, projectsQuerySchema } from './projects.ts';
import { searchQuerySchema } from './search.ts';

/**
 * Requests of the history reads: `asOf` on the board, a project and search, the diff, and
 * `include=changes` on delta pages. REST and the MCP tools (list_projects, get_project,
 * search_projects, diff_projects) take the same schemas.
 */

/** A point: an ISO 8601 time (the last write recorded at or before it) or a delta cursor (exactly that point). */
export const asOfParam = z
  .string()
  .min(1)
  .max(CURSOR_MAX)
  .describe(
    'A point in the archive: an ISO 8601 date-time (the board after the last project write recorded at or before it) or a delta cursor (exactly the point it was issued at, e.g. the `asOf.cursor` of an earlier answer, to pin a sequence of pages while the board moves).',
  );

/** GET /v1/projects with `asOf` (board mode) or `include=changes` (delta mode); the other parameters as without them. */
export const boardQuerySchema = projectsQuerySchema
  .extend({
    asOf: asOfParam.optional(),
    include: z
      .enum(['changes'], { message: "must be 'changes'" })
      .optional()
      .describe(
        "Delta mode: 'changes' adds `changes`, parallel to `projects`: for each row the top-level fields that differ from the project as of the starting point (the cursor, or the last write before `since`).",
      ),
  })
  .strict();

/** GET /v1/projects/changes with `include=changes`: a `changes` event before each row (docs/api-guide.md). */
export const changeStreamQuerySchema = changesQuerySchema
  .extend({
    include: z
      .enum(['changes'], { message: "must be 'changes'" })
      .optional()
      .describe(
        "'changes': before each row, an event named `changes` whose data is `{id, changedFields}`: the top-level fields in which the row differs from the project as of the stream's starting point (the cursor or Last-Event-ID, or the last write before `since`).",
      ),
  })
  .strict();

/** GET /v1/projects/{handle} with `asOf`: read from the history model, with the point it answered for. */
export const projectAsOfQuerySchema = projectQuerySchema.extend({ asOf: asOfParam.optional() }).strict();

/** GET /v1/search with `asOf`: matched on today's identifiers, the found project shown as it stood then. */
export const searchAsOfQuerySchema = searchQuerySchema.extend({ asOf: asOfParam.optional() }).strict();

/** GET /v1/projects/diff and the diff_projects tool. */
export const diffQuerySchema = z
  .object({
    from: asOfParam
      .optional()
      .describe(
        'The starting point (exclusive): an ISO 8601 date-time or a delta cursor. Required unless `cursor` is sent.',
      ),
    to: asOfParam
      .optional()
      .describe('The end point (inclusive), as `from`; default: now (the latest write), pinned by `next`.'),
    cursor: z
      .string()
      .min(1)
      .max(CURSOR_MAX)
      .optional()
      .describe('Continue from the `next` of an earlier diff page (it carries both points).'),
    limit: intParam(1, DIFF_LIMIT_MAX, DIFF_LIMIT_DEFAULT)
      .optional()
      .describe(`Rows per page: 1 to ${DIFF_LIMIT_MAX}, default ${DIFF_LIMIT_DEFAULT}.`),
  })
  .strict();

/** The list_projects tool with `asOf` (board mode only; delta mode is sync_projects). */
export const listProjectsAsOfToolSchema = boardQuerySchema.pick({ page: true, has_dossier: true, asOf: true }).strict();
/** The sync_projects tool with include=changes. */
export const syncChangesToolSchema = boardQuerySchema
  .pick({ since: true, cursor: true, limit: true, has_dossier: true, include: true })
  .strict();

export type BoardQuery = z.output<typeof boardQuerySchema>;
export type DiffQuery = z.output<typeof diffQuerySchema>;
