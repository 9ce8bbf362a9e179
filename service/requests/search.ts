import { z } from 'zod';

export const SEARCH_Q_MAX = 512;

/** GET /v1/search and the search_projects tool. */
export const searchQuerySchema = z
  .object({
    q: z
      .string({
        error: (issue) =>
          issue.input === undefined
            ? 'must be given: a project id, a contract, chain:contract, a website or a social profile'
            : Array.isArray(issue.input)
              ? 'must be given once'
              : 'must be a string',
      })
      .max(SEARCH_Q_MAX, `must be at most ${SEARCH_Q_MAX} characters`)
      .trim()
      .min(1, 'must not be empty: send a project id, a contract, chain:contract, a website or a social profile')
      .describe(
        'A stable project id; a contract (0x…, base58, …); a chain-qualified contract (base:0x…); a website (any URL or bare domain, compared on the lower-case host without www.); or a social profile (@name, name, x.com/name, https://twitter.com/name). 1 to 512 characters.',
      ),
  })
  .strict();

export type SearchQuery = z.output<typeof searchQuerySchema>;
