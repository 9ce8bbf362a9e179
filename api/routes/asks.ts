import type { Services } from '../../service/services.ts';
import { askListParamsSchema, askListQuerySchema } from '../../service/requests/asks.ts';
import { askListSchema } from '../../readmodels/schemas.ts';
import { replyWith as reply, type RestOperation } from '../operation.ts';

export function askOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'listProjectAsks',
      method: 'GET',
      path: '/v1/projects/:handle/ask',
      summary: 'What was asked of the research assistant about a project, and what it answered',
      description:
        'Newest first (by askedAt; an ask known only from its updates has askedAt null and is ordered by when it was first heard of). `question` null with `askedAt` set is a research request rather than a question. Open to allowlisted key owners only, re-checked on every call.',
      tags: ['projects'],
      protection: () => 'protected',
      request: { params: askListParamsSchema, query: askListQuerySchema },
      responses: { 200: { description: 'The asks of the project', schema: askListSchema } },
      errors: {
        400: 'Invalid handle or an unknown query parameter',
        401: 'Missing, malformed, unknown, revoked or expired key',
        403: 'The key owner is not allowlisted',
        404: 'No project with that id or handle',
        429: 'More than the per-key request budget in 60 seconds (Retry-After)',
        503: 'Rate protection or a store is unavailable (Retry-After)',
      },
      run: ({ caller, params, query }) => reply(services.asks.list(caller, params, query)),
    },
  ];
}
