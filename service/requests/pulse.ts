import { z } from 'zod';
import { BEATS } from '../../config/beats.ts';

/** GET /v1/pulse takes no parameters; anything sent is refused by name. */
export const pulseListQuerySchema = z.object({}).strict();

/** GET /v1/pulse/{beat}; an unknown beat is 404, not 400, so any short id is well-formed. */
export const pulseParamsSchema = z
  .object({
    beat: z
      .string()
      .min(1)
      .max(100, 'must be at most 100 characters')
      .describe(`A beat id: ${BEATS.map((b) => b.id).join(', ')}.`),
  })
  .strict();

export const pulseOneQuerySchema = z.object({}).strict();
