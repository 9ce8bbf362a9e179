import { historyParamsSchema, historyQuerySchema } from '../../service/requests/history.ts';
import type { Services } from '../../service/services.ts';
import { projectHistorySchema } from '../../readmodels/schemas.ts';
import { replyWith, type RestOperation } from '../operation.ts';

export function historyOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'getProjectHistory',
      method: 'GET',
      path: '/v1/projects/:handle/history',
      summary: "A project's writes, newest first",
      description:
        'Every write the archive made to the project, newest first: `writtenAt` and `seq` (as in delta mode), the event type, and the top-level fields that changed with their values before and after. A write is an event that changed the public document; the first write (the first sighting) lists every field with `before` null. Page with `next` until it is null; a cursor belongs to one project. The handle is resolved as in GET /projects/{handle} (an id first, then the most recent claim).',
      tags: ['projects'],
      protection: () => 'protected',
      request: { params: historyParamsSchema, query: historyQuerySchema },
      responses: { 200: { description: "A page of the project's writes", schema: projectHistorySchema } },
      errors: {
        400: "Invalid handle or limit, or a cursor that does not decode or belongs to another project's history",
        404: 'No project with that id or handle',
        409: 'The cursor was issued by a different archive; start again without it',
      },
      run: ({ params, query }) => replyWith(services.history.history(params, query)),
    },
  ];
}
