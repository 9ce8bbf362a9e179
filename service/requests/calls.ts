import { z } from 'zod';
import { CALL_PAGE_DEFAULT, CALL_PAGE_MAX, CURSOR_MAX } from '../../readmodels/schemas.ts';
import { intParam } from './params.ts';

export const CONTRACT_FILTER_MAX = 100;
/** The response budget of one call page, in bytes of UTF-8: the default and the most `maxBytes` may ask for. */
export const CALL_PAGE_BUDGET_MAX = 512 * 1024;
/** The smallest `maxBytes`: room for a page's envelope and, on MCP, the JSON-RPC framing. */
export const CALL_PAGE_BUDGET_MIN = 4096;
export const CHAIN_FILTER_MAX = 60;
/** Printable ASCII without space, quote or backslash: keeps a cursor that binds both filters under 512 characters. */
const FILTER_CHARS = /^[!#-\[\]-~]+$/;

/** GET /v1/calltracker/calls and the list_calltracker_calls tool. */
export const callsQuerySchema = z
  .object({
    limit: intParam(1, CALL_PAGE_MAX, CALL_PAGE_DEFAULT)
      .optional()
      .describe(
        `Most calls per page: 1 to ${CALL_PAGE_MAX}, default ${CALL_PAGE_DEFAULT}. A maximum, not a promise: the response budget (maxBytes) can make a page shorter.`,
      ),
    maxBytes: intParam(CALL_PAGE_BUDGET_MIN, CALL_PAGE_BUDGET_MAX, CALL_PAGE_BUDGET_MAX)
      .optional()
      .describe(
        `Response budget in bytes of UTF-8: ${CALL_PAGE_BUDGET_MIN} to ${CALL_PAGE_BUDGET_MAX}, default ${CALL_PAGE_BUDGET_MAX}. A page holds as many whole calls as fit (at least one; a text is never cut); follow next for the rest.`,
      ),
    cursor: z
      .string()
      .min(1, 'must not be empty')
      .max(CURSOR_MAX, `must be at most ${CURSOR_MAX} characters`)
      .optional()
      .describe(
        "Opaque; the `next` of the previous page. Send it with the same `contract` and `chain` as that page's request.",
      ),
    contract: z
      .string()
      .max(CONTRACT_FILTER_MAX, `must be at most ${CONTRACT_FILTER_MAX} characters`)
      .regex(FILTER_CHARS, 'must be a token address: printable ASCII without spaces, quotes or backslashes')
      .optional()
      .describe(
        'Exact token address (0x addresses compare case-insensitively). Without `chain`, matches chain-qualified calls on every chain. At most 5000 matching calls; more is 400.',
      ),
    chain: z
      .string()
      .max(CHAIN_FILTER_MAX, `must be at most ${CHAIN_FILTER_MAX} characters`)
      .regex(FILTER_CHARS, 'must be a chain name or key, e.g. ethereum, eth, base, solana, sol, bsc, arbitrum, arb')
      .optional()
      .describe(
        'Chain name or key (e.g. ethereum or eth, base, solana or sol, bsc, arbitrum or arb). Allowed only together with `contract`.',
      ),
  })
  .strict();

export type CallsQuery = z.output<typeof callsQuerySchema>;

/** GET /v1/calltracker/calls/{id} and the get_calltracker_call tool. */
export const callParamsSchema = z
  .object({ id: z.uuid({ message: 'must be a call id (a UUID)' }).describe('The call id (a UUID).') })
  .strict();

/** The detail read takes no query parameters; anything sent is refused by name. */
export const callQuerySchema = z.object({}).strict();
