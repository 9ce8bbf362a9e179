import type { Services } from '../../service/services.ts';
import { callParamsSchema, callQuerySchema, callsQuerySchema } from '../../service/requests/calls.ts';
import { callDetailSchema, callPageSchema } from '../../readmodels/schemas.ts';
import { replyWith as reply, replyWithJson, type RestOperation } from '../operation.ts';

export function callOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'listCalltrackerCalls',
      cache: 'no-store',
      method: 'GET',
      path: '/v1/calltracker/calls',
      summary: 'Stored call records, newest first',
      description:
        "Newest `createdAt` first, ties by id. Follow `next` with the same `contract` and `chain` until it is null, even when a page holds fewer than `limit` calls: a page holds as many whole calls as fit a 512 KiB response budget and never a shortened text (a single call larger than the budget is served alone). Browsing, not a delta sync: calls can be edited, backfilled or suppressed between pages; re-read a call by id for its current version. Each read checks suppression (no call cache). `pnl` is null when unknown, future-dated or at least 24 hours old; a token's `project` is set only when exactly one current project holds that chain and contract (`href` is `/projects/<id>`, relative to the site).",
      tags: ['calls'],
      protection: () => 'protected',
      request: { query: callsQuerySchema },
      responses: { 200: { description: 'A page of calls with the collector freshness', schema: callPageSchema } },
      errors: {
        400: "Invalid parameter; 'chain' without 'contract'; a cursor that does not decode or was issued with other filters; a contract filter matching more than 5000 calls",
      },
      run: ({ query }) => replyWithJson(services.calls.list(query, { surface: 'rest' })),
    },
    {
      operationId: 'getCalltrackerCall',
      cache: 'no-store',
      method: 'GET',
      path: '/v1/calltracker/calls/:id',
      summary: 'One stored call with its thesis, caller profile and uniquely matched current projects',
      description:
        'Unknown and suppressed calls are both 404. Read-time rules as for the listing (`pnl`, token `project`).',
      tags: ['calls'],
      protection: () => 'protected',
      request: { params: callParamsSchema, query: callQuerySchema },
      responses: { 200: { description: 'The call with the collector freshness', schema: callDetailSchema } },
      errors: {
        400: 'The id is not a UUID, or an unknown query parameter was sent',
        404: 'No visible call with that id (unknown or suppressed)',
      },
      run: ({ params, query }) => reply(services.calls.get(params, query)),
    },
  ];
}
