import { thesisErrorSchema, thesisStatusSchema } from '../../readmodels/schemas.ts';
import { ok } from '../../service/errors.ts';
import { thesisContractInputSchema } from '../../service/requests/thesis.ts';
import type { Services } from '../../service/services.ts';
import { replyWith, type RestOperation } from '../operation.ts';

const PRIVATE = { 'cache-control': 'private, no-store' };

const thesisErrors = {
  400: 'Invalid contract or request shape',
  401: 'Missing, malformed, unknown, revoked or expired key',
  403: 'The key owner is not linked and allowlisted',
  429: 'Rate, queue, cooldown or daily limit (Retry-After in seconds)',
  503: 'Feature disabled, reader offline, rate protection unavailable, or database unavailable',
};

export function thesisOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'getThesisFeed',
      cache: 'no-store',
      method: 'GET',
      path: '/v1/thesisfeed/theses',
      summary: 'Saved thesis snapshot and request status for one contract (private)',
      description:
        'Returns the saved snapshot or an honest missing, pending or failed status. No source reads, no enqueueing, no research. Linked allowlist members only, re-checked on every call. At most 25 recent theses at or above the 1000 USD threshold; not a full history. Poll at most every 15 seconds for up to two minutes.',
      tags: ['thesis feed'],
      protection: () => 'protected',
      request: { query: thesisContractInputSchema },
      responses: { 200: { description: 'The thesis status', schema: thesisStatusSchema } },
      errors: thesisErrors,
      errorSchema: thesisErrorSchema,
      headers: PRIVATE,
      run: ({ caller, query }) => replyWith(services.thesis.status(caller, query)),
    },
    {
      operationId: 'requestThesisFeed',
      method: 'POST',
      path: '/v1/thesisfeed/theses',
      summary: 'Request one shared thesis snapshot (private; strict daily caps)',
      description:
        'A fresh shared cache hit answers 200; otherwise the request is queued (202) and one shared, deduplicated source read follows; read progress with GET. A POST while a job is pending creates nothing. Caps: 30-minute shared cache, 20 submissions per member per UTC day, 60 starts per UTC day in all (failures count), 16 open jobs, no automatic retries.',
      tags: ['thesis feed'],
      protection: () => 'protected',
      request: { body: thesisContractInputSchema },
      responses: {
        200: { description: 'Fresh shared cache hit', schema: thesisStatusSchema },
        202: { description: 'Queued or already running; read progress with GET', schema: thesisStatusSchema },
      },
      errors: thesisErrors,
      errorSchema: thesisErrorSchema,
      headers: PRIVATE,
      run: async ({ caller, body }) => {
        const result = await services.thesis.request(caller, body);
        return result.ok ? ok({ status: result.value.httpStatus, body: result.value.status }) : result;
      },
    },
  ];
}
