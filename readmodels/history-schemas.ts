import { z } from 'zod';
import { apiDocs } from './descriptions.ts';
import {
  boardPageSchema,
  CURSOR_MAX,
  isoDateTime,
  projectReadSchema,
  projectSchema,
  projectSearchSchema,
  SYNC_LIMIT_MAX,
  syncPageSchema,
} from './schemas.ts';

/**
 * Response shapes of the history reads (`asOf`, the diff, `include=changes`): the live shapes with
 * the point they answered for, so one schema per shape feeds the service, OpenAPI and the MCP tools.
 */

export const DIFF_LIMIT_DEFAULT = 50;
export const DIFF_LIMIT_MAX = 100;

/** A top-level Project field name (derived from projectSchema: a field added there is one here). */
export const projectFieldNameSchema = projectSchema.keyof();
export type ProjectFieldName = z.infer<typeof projectFieldNameSchema>;

export const asOfPointSchema = z.object({ at: isoDateTime.nullable(), cursor: z.string().max(CURSOR_MAX) }).strict();
export type AsOfPoint = z.infer<typeof asOfPointSchema>;

export const boardPageAsOfSchema = boardPageSchema.extend({ asOf: asOfPointSchema }).strict();
export const projectReadAsOfSchema = projectReadSchema.extend({ asOf: asOfPointSchema }).strict();
export const projectSearchAsOfSchema = projectSearchSchema.extend({ asOf: asOfPointSchema }).strict();

export const projectChangeSchema = z
  .object({
    id: z.string(),
    change: z.enum(['added', 'changed']),
    fields: z.array(projectFieldNameSchema),
    before: projectSchema.nullable(),
    after: projectSchema,
  })
  .strict();

export const projectDiffSchema = z
  .object({
    from: asOfPointSchema,
    to: asOfPointSchema,
    changes: z.array(projectChangeSchema).max(DIFF_LIMIT_MAX),
    next: z.string().max(CURSOR_MAX).nullable(),
    readAt: isoDateTime,
  })
  .strict();

export const changedFieldsSchema = z
  .object({ id: z.string(), changedFields: z.array(projectFieldNameSchema) })
  .strict();

export const syncPageChangesSchema = syncPageSchema
  .extend({ changes: z.array(changedFieldsSchema).max(SYNC_LIMIT_MAX) })
  .strict();

export type BoardPageAsOf = z.infer<typeof boardPageAsOfSchema>;
export type ProjectReadAsOf = z.infer<typeof projectReadAsOfSchema>;
export type ProjectSearchAsOf = z.infer<typeof projectSearchAsOfSchema>;
export type ProjectChange = z.infer<typeof projectChangeSchema>;
export type ProjectDiff = z.infer<typeof projectDiffSchema>;
export type ChangedFields = z.infer<typeof changedFieldsSchema>;
export type SyncPageChanges = z.infer<typeof syncPageChangesSchema>;

const ASOF_FIELD =
  'The point this answer is for: `at`, when the archive recorded the last project write at or before it (null before the first), and `cursor`, a delta cursor at exactly that point (send it as `asOf` to read more pages as of the same point, or as `cursor` to sync what was written since).';

apiDocs.add(asOfPointSchema, {
  description: 'A point in the archive.',
  fields: {
    at: 'recordedAt of the last project write at or before the point; null when no project had been written yet.',
    cursor:
      'A delta cursor at the point: as `asOf`, exactly this point; as `cursor` in delta mode, the writes after it.',
  },
});
apiDocs.add(boardPageAsOfSchema, {
  description: 'A board page as it stood at a point (asOf).',
  fields: {
    ...apiDocs.get(boardPageSchema)?.fields,
    total: 'Projects on the board at the point (with the has_dossier filter, matching it).',
    asOf: ASOF_FIELD,
  },
});
apiDocs.add(projectReadAsOfSchema, {
  description: 'One project as it stood at a point (asOf).',
  fields: { ...apiDocs.get(projectReadSchema)?.fields, asOf: ASOF_FIELD },
});
apiDocs.add(projectSearchAsOfSchema, {
  description: 'A search whose found project is shown as it stood at a point (asOf).',
  fields: { ...apiDocs.get(projectSearchSchema)?.fields, asOf: ASOF_FIELD },
});
apiDocs.add(projectChangeSchema, {
  description: 'The net change of one project between two points.',
  fields: {
    id: 'The project id.',
    change: '`added`: not on the board at `from`; `changed`: on it, with other values.',
    fields: 'Top-level Project fields whose values differ between `before` and `after` (every field when added).',
    before: 'The project at `from`; null when added.',
    after: 'The project at `to`.',
  },
});
apiDocs.add(projectDiffSchema, {
  description: 'Net changes between two points, one row per project whose document differs, in delta order.',
  fields: {
    from: 'The starting point (exclusive).',
    to: 'The end point (inclusive); pinned by `next` while paging.',
    changes: "Up to `limit` rows, ordered by the position of each project's last write up to `to`, then id.",
    next: 'Send as `cursor` for the next page; null on the last page.',
    readAt: 'When the read model was read.',
  },
});
apiDocs.add(changedFieldsSchema, {
  description: "Which top-level fields of one delta row differ from the project as of the request's starting point.",
  fields: {
    id: 'The project id (the row of `projects` at the same index).',
    changedFields:
      'Top-level fields that differ from the project at the starting point; every field for a project new since then.',
  },
});
apiDocs.add(syncPageChangesSchema, {
  description: 'A delta page with include=changes.',
  fields: {
    ...apiDocs.get(syncPageSchema)?.fields,
    changes:
      'Parallel to `projects`: for each row, the top-level fields that differ from the project as of the starting point (cursor or since).',
  },
});
