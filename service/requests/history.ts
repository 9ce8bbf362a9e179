import { z } from 'zod';
import { CURSOR_MAX, HISTORY_LIMIT_MAX } from '../../readmodels/schemas.ts';
import { intParam } from './params.ts';

export { projectParamsSchema as historyParamsSchema } from './projects.ts';

/** GET /v1/projects/{handle}/history. */
export const historyQuerySchema = z
  .object({
    limit: intParam(1, HISTORY_LIMIT_MAX).optional().describe('Writes per page: 1 to 100, default 20.'),
    cursor: z
      .string()
      .min(1)
      .max(CURSOR_MAX)
      .optional()
      .describe("Continue from the `next` of an earlier page of this project's history (older writes)."),
  })
  .strict();

export type HistoryQuery = z.output<typeof historyQuerySchema>;
