import { z } from 'zod';
import { BEATS } from '../../config/beats.ts';
import { advertised } from './params.ts';

/** GET /v1/pulse takes no parameters; anything sent is refused by name. */
export const pulseListQuerySchema = z.object({}).strict();

/** An unknown beat is 404, not 400, so any short id is well-formed; typed clients are shown the real ids. */
const beatSchema = z.string().min(1).max(100, 'must be at most 100 characters');
advertised.add(beatSchema, { type: 'string', enum: BEATS.map((b) => b.id) });

/** GET /v1/pulse/{beat}. */
export const pulseParamsSchema = z
  .object({ beat: beatSchema.describe(`A beat id: ${BEATS.map((b) => b.id).join(', ')}.`) })
  .strict();

export const pulseOneQuerySchema = z.object({}).strict();
