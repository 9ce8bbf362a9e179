import { BEATS } from '../../config/beats.ts';
import type { Services } from '../../service/services.ts';
import { pulseListQuerySchema, pulseOneQuerySchema, pulseParamsSchema } from '../../service/requests/pulse.ts';
import { pulseListSchema, pulseOneSchema } from '../../readmodels/schemas.ts';
import { replyWith as reply, type RestOperation } from '../operation.ts';

const beatIds = BEATS.map((b) => b.id).join(', ');

export function pulseOperations(services: Services): RestOperation[] {
  return [
    {
      operationId: 'listPulse',
      method: 'GET',
      path: '/v1/pulse',
      summary: 'All eight beats with their current pulse cards',
      description: `Always the eight configured beats in this order: ${beatIds}. \`card\` is null for a beat with no card yet; a \`quiet\` card means nothing moved, not that something broke.`,
      tags: ['pulse'],
      protection: () => 'basic',
      request: { query: pulseListQuerySchema },
      responses: { 200: { description: 'The eight beats', schema: pulseListSchema } },
      errors: { 400: 'An unknown query parameter was sent' },
      run: ({ query }) => reply(services.pulse.all(query)),
    },
    {
      operationId: 'getPulseBeat',
      method: 'GET',
      path: '/v1/pulse/:beat',
      summary: 'One beat with its current pulse card',
      description: `\`beat\` is one of: ${beatIds}. \`card\` is null when the beat has no card yet.`,
      tags: ['pulse'],
      protection: () => 'basic',
      request: { params: pulseParamsSchema, query: pulseOneQuerySchema },
      responses: { 200: { description: 'The beat', schema: pulseOneSchema } },
      errors: { 400: 'A beat id over 100 characters, or an unknown query parameter', 404: 'No beat with that id' },
      run: ({ params, query }) => reply(services.pulse.one(params, query)),
    },
  ];
}
