import type { Services } from '../../service/services.ts';
import { searchQuerySchema } from '../../service/requests/search.ts';
import { projectSearchSchema } from '../../readmodels/schemas.ts';
import { replyWithJson, type RestOperation } from '../operation.ts';

export function searchOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'searchProjects',
      method: 'GET',
      path: '/v1/search',
      summary: 'Find a stored project by id, contract, website or social profile',
      description:
        'Accepted forms of `q`: a stable project id (wins over every other reading); a contract (`0x…`, base58, …); a chain-qualified contract (`base:0x…`, chain names and keys normalize: eth = ethereum); a website (any URL or bare domain, compared on the lower-case host without `www.`); a social profile (`@name`, `name`, `x.com/name`, `https://twitter.com/name`; the project `GET /projects/@name` returns, else a unique submitted identity handle). One match: `found` with `project` and `context`; none: `missing`; a bare contract whose matches span several chains: `chain_required` (send `chain:contract`); several matches otherwise: `ambiguous` (narrow with `chain:contract` or the project id). A search only reads: it never creates a project, starts research or records anything.',
      tags: ['search'],
      protection: () => 'protected',
      request: { query: searchQuerySchema },
      responses: { 200: { description: 'The search outcome; project and context are null unless found', schema: projectSearchSchema } },
      errors: { 400: "'q' missing, empty, over 512 characters or in none of the accepted forms, or an unknown parameter" },
      run: ({ caller, query }) => replyWithJson(services.search.search(caller, query)),
    },
  ];
}
