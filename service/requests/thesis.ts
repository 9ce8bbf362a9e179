import { z } from 'zod';
import { thesisContractSchema } from '../../readmodels/schemas.ts';

/** GET query and POST body of the thesis feed: exactly `{contract}`. */
export const thesisContractInputSchema = z
  .object({
    contract: thesisContractSchema.describe(
      'Token contract on the single supported chain: 0x followed by 40 hex digits.',
    ),
  })
  .strict();
