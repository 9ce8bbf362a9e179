import { z } from 'zod';
import { researchPayloads } from '../../events/research.ts';
import { projectParamsSchema } from './projects.ts';

/** GET /v1/projects/{handle}/ask and the researcher_answers tool: the same handle as a project read. */
export const askListParamsSchema = projectParamsSchema;

/** The ask list takes no query parameters; an unknown one is a 400 naming it. */
export const askListQuerySchema = z.object({}).strict();

/** The ask_researcher tool (no REST twin: the spec gives research submission to the tool surface). */
export const askResearcherSchema = projectParamsSchema
  .extend({
    question: researchPayloads['ask.asked'].shape.question
      .refine((q) => q.trim() !== '', 'must not be blank')
      .optional()
      .describe(
        'A question for the research assistant about this project (1 to 4000 characters). Leave it out to request research on the project instead.',
      ),
  })
  .strict();
