import { z } from 'zod';
import { isoDateTime } from '../readmodels/schemas.ts';

/** Research requests and questions appended by `ask_researcher`. */
export const researchPayloads = {
  'research.requested': z
    .object({ projectId: z.string().min(1), requestId: z.string().min(1), owner: z.string().min(1), at: isoDateTime })
    .strict(),
  'ask.asked': z
    .object({
      projectId: z.string().min(1),
      askId: z.string().min(1),
      question: z.string().min(1).max(4000),
      owner: z.string().min(1),
      at: isoDateTime,
    })
    .strict(),
} as const;

export type ResearchType = keyof typeof researchPayloads;
