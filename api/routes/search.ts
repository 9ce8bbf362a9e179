import type { Services } from '../../service/services.ts';
import { projectSearchSchema } from '../../readmodels/schemas.ts';
import { projectSearchAsOfSchema } from '../../readmodels/history-schemas.ts';
import { searchAsOfQuerySchema } from '../../service/requests/history-board.ts';
import { replyWithJson, type RestOperation } from '../operation.ts';

export function searchOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'searchProjects',
      method: 'GET',
      path: '/v1/search',
      summary: 'Find a stored project by id, contract, website or social profile',
      description:
        "Accepted forms of `q`: a stable project id (wins over every other reading); a contract (`0x…`, base58, …); a chain-qualified contract (`base:0x…`, chain names and keys normalize: eth = ethereum); a website (any URL or bare domain, compared on the lower-case host without `www.`); a social profile (`@name`, `name`, `x.com/name`, `https://twitter.com/name`; the project `GET /projects/@name` returns, else a unique submitted identity handle). One match: `found` with `project` and `context`; none: `missing`; a bare contract whose matches span several chains: `chain_required` (send `chain:contract`); several matches otherwise: `ambiguous` (narrow with `chain:contract` or the project id). A search only reads: it never creates a project, starts research or records anything. With `asOf` (an ISO time or a delta cursor): matched on today's identifiers, the found project and its context shown as they stood at that point (`missing` if it was not on the board yet), and `asOf` naming the point.",
      tags: ['search'],
      protection: () => 'protected',
      request: { query: searchAsOfQuerySchema },
      responses: {
        200: {
          description: 'The search outcome; project and context are null unless found',
          schema: projectSearchSchema.or(projectSearchAsOfSchema),
        },
      },
      errors: {
        400: "'q' missing, empty, over 512 characters or in none of the accepted forms, an invalid asOf, or an unknown parameter",
        409: 'asOf is a cursor issued by a different archive',
        503: 'asOf: the read store keeps no complete history (run pulseboard replay), or the cursor names a point not applied yet',
      },
      run: ({ caller, query }) => replyWithJson(services.board.search(caller, query)),
    },
  ];
}
