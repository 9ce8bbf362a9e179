import { projectDiffSchema } from '../../readmodels/history-schemas.ts';
import { diffQuerySchema } from '../../service/requests/history-board.ts';
import type { Services } from '../../service/services.ts';
import { replyWithJson, type RestOperation } from '../operation.ts';

/** GET /v1/projects/diff: net changes between two points of the board (the history read model). */
export function diffOperation(services: Services): RestOperation {
  return {
    operationId: 'diffProjects',
    method: 'GET',
    path: '/v1/projects/diff',
    summary: 'What changed on the board between two points',
    description:
      'One row per project whose document at `to` differs from the one at `from` (`from` exclusive, `to` inclusive, default now), in delta order (the position of its last write up to `to`, then id): `change` is `added` (not on the board at `from`) or `changed`, `fields` names the top-level fields that differ, `before` and `after` are the Project at each point. A project written and changed back in between has no row. A point is an ISO 8601 time (the last project write recorded at or before it) or a delta cursor (exactly its position); `from` and `to` in the answer name both points. Page with `next` (it pins both points).',
    tags: ['projects'],
    protection: () => 'protected',
    request: { query: diffQuerySchema },
    linksNext: true,
    responses: { 200: { description: 'A page of net changes', schema: projectDiffSchema } },
    errors: {
      400: "Invalid parameter; neither 'from' nor 'cursor'; 'from' later than 'to'; or a cursor that does not decode",
      409: 'A cursor (or a point given as one) was issued by a different archive',
      503: 'The read store keeps no complete history (run pulseboard replay), or a cursor names a point not applied yet',
    },
    run: ({ query }) => replyWithJson(services.historyBoard.diff(query)),
  };
}
