import type { Services } from '../../service/services.ts';
import { ok } from '../../service/errors.ts';
import { changesQuerySchema, projectParamsSchema, projectQuerySchema, projectsQuerySchema } from '../../service/requests/projects.ts';
import { boardPageSchema, projectReadSchema, projectSchema, syncPageSchema } from '../../readmodels/schemas.ts';
import { replyWithJson, type RestOperation } from '../operation.ts';

export function projectOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'listProjects',
      method: 'GET',
      path: '/v1/projects',
      summary: 'The board (page mode) or what the archive wrote since a point (delta mode)',
      description:
        "Board mode (`page`, default page 1): 50 projects per page, newest `firstSeenByUs` first, ties by id, with totals. Delta mode (`since` or `cursor`): rows the archive wrote since that point, in write order; `cursor` is always returned: send it back to continue now (while `hasMore`) or later. A write is not necessarily a material change. `page` with `since`/`cursor` is 400.",
      tags: ['projects'],
      protection: () => 'basic',
      request: { query: projectsQuerySchema },
      responses: { 200: { description: 'A board page or a delta page', schema: boardPageSchema.or(syncPageSchema) } },
      errors: {
        400: 'Invalid parameter, page combined with since/cursor, limit in page mode, or a cursor that does not decode or carries other filters',
        409: 'The cursor was issued by a different archive; start again from since',
      },
      // The input's signal is made only when a page that waits (a long-poll) asks for it.
      run: (input) => replyWithJson(services.projects.list(input.query, input)),
    },
    {
      operationId: 'streamProjectChanges',
      method: 'GET',
      path: '/v1/projects/changes',
      summary: 'The delta as a live stream of server-sent events',
      description:
        "Server-sent events (`text/event-stream`) on the delta cursor: one event per written project row, in delta order, `id:` the cursor after that row and `data:` the same Project JSON as a delta page; then every later write as it is committed. A comment line (`: heartbeat`) at least every 15 s while idle. Start with `cursor` (from a delta page or an event id) or `since` (`now` for new writes only); on reconnect the `Last-Event-ID` header wins over both, so nothing is sent twice and nothing is missed, also across `pulseboard replay`. Opening a stream spends one request; at most 2 streams per key may be open (the third is 429).",
      tags: ['projects'],
      protection: () => 'basic',
      produces: 'text/event-stream',
      request: { query: changesQuerySchema },
      responses: { 200: { description: 'The stream: one event per written project row (its data is a Project)', schema: projectSchema } },
      errors: {
        400: "Invalid parameter; none of cursor, since and Last-Event-ID; or a cursor that does not decode or carries another has_dossier",
        409: 'The cursor was issued by a different archive; start again from since',
        429: 'Rate limit exceeded, or 2 streams of this key are open already',
        503: 'The service is shutting down; reconnect shortly',
      },
      run: async ({ caller, query, headers, signal }) => {
        const lastEventId = headers['last-event-id'];
        const resume = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : undefined;
        const opened = await services.changes.open(caller.keyId, query, resume, signal);
        return opened.ok ? ok({ stream: opened.value }) : opened;
      },
    },
    {
      operationId: 'getProject',
      method: 'GET',
      path: '/v1/projects/:handle',
      summary: 'One project by stable id or social handle',
      description:
        'An id always wins over a handle; a reused handle resolves to the project that claimed it most recently. `include=context` adds votes, research status and freshness (voter names only for an allowlisted key owner; otherwise `voters` is null).',
      tags: ['projects'],
      protection: (query) => (services.projects.isEnriched(query) ? 'protected' : 'basic'),
      request: { params: projectParamsSchema, query: projectQuerySchema },
      responses: { 200: { description: 'The project, with context when asked', schema: projectReadSchema } },
      errors: { 400: 'Invalid handle, include or asOf value', 404: 'No project with that id or handle, or (with asOf) not yet sighted at that time' },
      run: ({ caller, params, query }) => replyWithJson(services.projects.get(caller, params, query)),
    },
  ];
}
