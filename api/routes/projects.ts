import type { Services } from '../../service/services.ts';
import { ok } from '../../service/errors.ts';
import { projectParamsSchema } from '../../service/requests/projects.ts';
import { boardPageSchema, projectReadSchema, projectSchema, syncPageSchema } from '../../readmodels/schemas.ts';
import { boardPageAsOfSchema, projectReadAsOfSchema, syncPageChangesSchema } from '../../readmodels/history-schemas.ts';
import {
  boardQuerySchema,
  changeStreamQuerySchema,
  projectAsOfQuerySchema,
} from '../../service/requests/history-board.ts';
import { replyWithJson, type RestOperation } from '../operation.ts';
import { diffOperation } from './history-board.ts';

export function projectOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'listProjects',
      method: 'GET',
      path: '/v1/projects',
      summary: 'The board (page mode) or what the archive wrote since a point (delta mode)',
      description:
        "Board mode (`page`, default page 1): 50 projects per page, newest `firstSeenByUs` first, ties by id, with totals. Delta mode (`since` or `cursor`): rows the archive wrote since that point, in write order; `cursor` is always returned: send it back to continue now (while `hasMore`) or later. A write is not necessarily a material change. `page` with `since`/`cursor` is 400. With `asOf` (board mode): the board as it stood at that point, with its totals then, and `asOf` naming the point (send its `cursor` as `asOf` to read more pages of the same point). With `include=changes` (delta mode): `changes`, parallel to `projects`, names each row's top-level fields that differ from the project at the starting point.",
      tags: ['projects'],
      protection: () => 'basic',
      linksNext: true,
      request: { query: boardQuerySchema },
      responses: {
        200: {
          description: 'A board page or a delta page (as of a point with asOf; with changes with include=changes)',
          schema: boardPageSchema.or(syncPageSchema).or(boardPageAsOfSchema).or(syncPageChangesSchema),
        },
      },
      errors: {
        400: 'Invalid parameter, page combined with since/cursor, limit in page mode, or a cursor (or asOf given as a cursor) that does not decode, carries other filters, or names a position past the event log',
        409: 'The cursor (or asOf given as a cursor) was issued by a different archive; start again from since',
        503: 'asOf or include=changes: the read store keeps no complete history (run pulseboard replay), or the cursor names a point not applied yet',
      },
      // The input's signal is made only when a page that waits (a long-poll) asks for it.
      run: (input) => replyWithJson(services.board.list(input.query, input)),
    },
    diffOperation(services),
    {
      operationId: 'streamProjectChanges',
      method: 'GET',
      path: '/v1/projects/changes',
      summary: 'The delta as a live stream of server-sent events',
      description:
        'Server-sent events (`text/event-stream`) on the delta cursor: one event per written project row, in delta order, `id:` the cursor after that row and `data:` the same Project JSON as a delta page; then every later write as it is committed. A comment line (`: heartbeat`) at least every 15 s while idle. Start with `cursor` (from a delta page or an event id) or `since` (`now` for new writes only); on reconnect the `Last-Event-ID` header wins over both, so nothing is sent twice and nothing is missed, also across `pulseboard replay`. Opening a stream spends one request; at most 2 streams per key may be open (the third is 429). A key revoked (or expired) while its stream is open ends the stream with an event named `error` whose data is the error envelope (`unauthorized`); rows written after the revocation are not sent. With `include=changes`, each row event is preceded by an event named `changes` (no `id:`) whose data is `{id, changedFields}`: the top-level fields in which that row differs from the project as of the starting point of the stream (its cursor or Last-Event-ID, or the last write before `since`); every field for a project new since then.',
      tags: ['projects'],
      protection: () => 'basic',
      produces: 'text/event-stream',
      request: { query: changeStreamQuerySchema },
      responses: {
        200: {
          description: 'The stream: one event per written project row (its data is a Project)',
          schema: projectSchema,
        },
      },
      errors: {
        400: 'Invalid parameter; none of cursor, since and Last-Event-ID; or a cursor that does not decode, carries another has_dossier, or names a position past the event log',
        409: 'The cursor was issued by a different archive; start again from since',
        429: 'Rate limit exceeded, or 2 streams of this key are open already',
        503: 'The service is shutting down; reconnect shortly; or include=changes on a read store without a complete history',
      },
      run: async ({ caller, query, headers, signal, authorization }) => {
        const lastEventId = headers['last-event-id'];
        const resume = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : undefined;
        const opened = await services.changes.open({ keyId: caller.keyId, authorization }, query, resume, signal);
        return opened.ok ? ok({ stream: opened.value }) : opened;
      },
    },
    {
      operationId: 'getProject',
      method: 'GET',
      path: '/v1/projects/:handle',
      summary: 'One project by stable id or social handle',
      description:
        "An id always wins over a handle; a reused handle resolves to the project that claimed it most recently. `include=context` adds votes, research status and freshness (voter names only for an allowlisted key owner; otherwise `voters` is null). With `asOf` (an ISO time or a delta cursor): the project as it stood at that point, read from the history model, and `asOf` naming the point; the handle is resolved on today's board (use the id for a project whose handle changed).",
      tags: ['projects'],
      protection: (query) => (services.projects.isEnriched(query) ? 'protected' : 'basic'),
      request: { params: projectParamsSchema, query: projectAsOfQuerySchema },
      responses: {
        200: {
          description: 'The project, with context when asked (and the point with asOf)',
          schema: projectReadSchema.or(projectReadAsOfSchema),
        },
      },
      errors: {
        400: 'Invalid handle, include or asOf value',
        404: 'No project with that id or handle, or (with asOf) not yet on the board at that point',
        409: 'asOf is a cursor issued by a different archive',
        503: 'asOf: the read store keeps no complete history (run pulseboard replay), or the cursor names a point not applied yet',
      },
      run: ({ caller, params, query }) => replyWithJson(services.board.project(caller, params, query)),
    },
  ];
}
