import { z } from 'zod';
import {
  beatSchema,
  boardPageSchema,
  callDetailSchema,
  callerSchema,
  callFreshnessSchema,
  callPageSchema,
  callProjectSchema,
  callRecordSchema,
  callTokenSchema,
  calltrackerSummarySchema,
  dossierSchema,
  errorSchema,
  followerStatsSchema,
  identitySchema,
  onchainSchema,
  pnlSchema,
  projectContextSchema,
  projectReadSchema,
  projectSchema,
  projectSearchSchema,
  pulseCardSchema,
  pulseListSchema,
  pulseOneSchema,
  syncPageSchema,
  thesisErrorSchema,
  thesisStatusSchema,
  askListSchema,
} from '../readmodels/schemas.ts';
import { apiDocs } from '../readmodels/descriptions.ts';
import { ERROR_EXAMPLES, OPERATION_EXAMPLES } from './examples.ts';
import type { RestOperation } from './operation.ts';

/** The interface description version ; the REST paths carry the major version as /v1. */
export const INTERFACE_VERSION = '1.0.0';
export const API_BASE_PATH = '/v1';

type JsonObject = Record<string, unknown>;

export type OpenApiDocument = {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string; contact: { name: string }; license: { name: string } };
  servers: { url: string; description: string }[];
  security: Record<string, string[]>[];
  tags: { name: string; description?: string }[];
  paths: Record<string, Record<string, JsonObject>>;
  components: {
    schemas: Record<string, JsonObject>;
    securitySchemes: Record<string, JsonObject>;
    headers: Record<string, JsonObject>;
  };
};

/** Shapes that get a name under components/schemas; any other response schema is named after its operation. */
const NAMED_SCHEMAS: readonly [z.ZodType, string][] = [
  [projectSchema, 'Project'],
  [identitySchema, 'Identity'],
  [followerStatsSchema, 'FollowerStats'],
  [dossierSchema, 'Dossier'],
  [onchainSchema, 'Onchain'],
  [calltrackerSummarySchema, 'CalltrackerSummary'],
  [projectContextSchema, 'ProjectContext'],
  [projectReadSchema, 'ProjectRead'],
  [boardPageSchema, 'BoardPage'],
  [syncPageSchema, 'SyncPage'],
  [projectSearchSchema, 'ProjectSearch'],
  [pulseCardSchema, 'PulseCard'],
  [beatSchema, 'Beat'],
  [pulseListSchema, 'PulseList'],
  [pulseOneSchema, 'PulseOne'],
  [pnlSchema, 'Pnl'],
  [callerSchema, 'Caller'],
  [callProjectSchema, 'CallProject'],
  [callTokenSchema, 'CallToken'],
  [callRecordSchema, 'CalltrackerCall'],
  [callFreshnessSchema, 'CallFreshness'],
  [callPageSchema, 'CallPage'],
  [callDetailSchema, 'CallDetail'],
  [thesisStatusSchema, 'ThesisStatus'],
  [askListSchema, 'AskList'],
  [errorSchema, 'Error'],
  [thesisErrorSchema, 'ThesisError'],
];

const SCHEMA_REF = (id: string) => `#/components/schemas/${id}`;

type ZodDef = {
  type: string;
  innerType?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  shape?: Record<string, z.ZodType>;
};
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
const WRAPPERS = new Set(['nullable', 'optional', 'default', 'readonly', 'nonoptional', 'catch', 'prefault']);

/**
 * Copies the field descriptions of readmodels/descriptions.ts into a rendered schema, walking the
 * zod schema and its JSON Schema side by side. It stops at a $ref (a named component is annotated
 * where it is defined), and writes copies, because a rendered node can be shared by two properties.
 */
export function annotateDescriptions(schema: z.ZodType, json: JsonObject, inherited?: Record<string, string>): void {
  if (typeof json.$ref === 'string') return;
  const def = defOf(schema);
  if (WRAPPERS.has(def.type) && def.innerType) {
    const branches = Array.isArray(json.anyOf) ? (json.anyOf as JsonObject[]).filter((b) => b.type !== 'null') : [json];
    for (const branch of branches) annotateDescriptions(def.innerType, branch, inherited);
    return;
  }
  if (def.type === 'pipe' && def.out) return annotateDescriptions(def.out, json, inherited);
  const docs = apiDocs.get(schema);
  if (docs?.description !== undefined && json.description === undefined) json.description = docs.description;
  if (def.type === 'union' && def.options) {
    const branches = (json.anyOf ?? json.oneOf) as JsonObject[] | undefined;
    def.options.forEach(
      (option, i) => branches?.[i] && annotateDescriptions(option, branches[i], docs?.fields ?? inherited),
    );
    return;
  }
  if (def.type === 'array' && def.element && json.items)
    return annotateDescriptions(def.element, json.items as JsonObject);
  if (def.type !== 'object' || !def.shape) return;
  const fields = docs?.fields ?? inherited;
  const properties = json.properties as Record<string, JsonObject> | undefined;
  if (!properties) return;
  for (const [key, child] of Object.entries(def.shape)) {
    const rendered = properties[key];
    if (!rendered) continue;
    const description = fields?.[key];
    const copy: JsonObject = {
      ...rendered,
      ...(description !== undefined && rendered.description === undefined ? { description } : {}),
    };
    properties[key] = copy;
    annotateDescriptions(child, copy);
  }
}

/** Parameter schemas render their input side, except that a pipe renders what it produces (an integer 1–30, not "digits"). */
function pipeOutputs(ctx: { zodSchema: unknown; jsonSchema: JsonObject }): void {
  const def = (ctx.zodSchema as { _zod: { def: { type: string; out?: { _zod: { def: { type: string } } } } } })._zod
    .def;
  if (def.type !== 'pipe' || !def.out || def.out._zod.def.type === 'transform') return;
  const rendered = z.toJSONSchema(def.out as unknown as z.ZodType, {
    target: 'draft-2020-12',
    io: 'output',
  }) as JsonObject;
  delete rendered.$schema;
  const description = ctx.jsonSchema.description;
  for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
  Object.assign(ctx.jsonSchema, rendered, description === undefined ? {} : { description });
}

/** Path and query parameters of one operation, from its request schemas. */
function parametersOf(op: RestOperation): JsonObject[] {
  const out: JsonObject[] = [];
  for (const [where, schema] of [
    ['path', op.request.params],
    ['query', op.request.query],
  ] as const) {
    if (!schema) continue;
    const rendered = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', override: pipeOutputs }) as {
      properties?: Record<string, JsonObject>;
      required?: string[];
    };
    for (const [name, property] of Object.entries(rendered.properties ?? {})) {
      const { description, ...propertySchema } = property;
      out.push({
        name,
        in: where,
        required: where === 'path' || (rendered.required ?? []).includes(name),
        ...(description === undefined ? {} : { description }),
        schema: propertySchema,
      });
    }
  }
  return out;
}

/** A JSON request body, described by its input side like the parameters. */
function requestBodyOf(schema: z.ZodType): JsonObject {
  const rendered = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    override: pipeOutputs,
  }) as JsonObject;
  delete rendered.$schema;
  return { required: true, content: { 'application/json': { schema: rendered } } };
}

const HEADERS: Record<string, JsonObject> = {
  RateLimitLimit: {
    description: 'Requests allowed per 60 seconds for this key (sent while rate protection is available).',
    schema: { type: 'integer' },
  },
  RateLimitRemaining: { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  RateLimitReset: { description: 'Seconds until the window frees a request.', schema: { type: 'integer' } },
  RateLimitPolicy: {
    description:
      'IETF httpapi RateLimit draft: the quota policy, `"requests";q=<limit>;w=60` (requests per 60-second window, REST and MCP together).',
    schema: { type: 'string' },
  },
  RateLimit: {
    description:
      'IETF httpapi RateLimit draft: what is left of the policy, `"requests";r=<remaining>;t=<seconds until a request frees up>`.',
    schema: { type: 'string' },
  },
  RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  CacheControl: {
    description:
      'Successful reads: `private, max-age=0, must-revalidate` (revalidate with `If-None-Match`), except call records and the thesis feed, which are `private, no-store`; errors are `private, no-store`.',
    schema: { type: 'string' },
  },
  ETag: {
    description:
      'Weak validator of the data in this read (the top-level `readAt` is left out); send it back in `If-None-Match` to get 304 while the data is unchanged.',
    schema: { type: 'string' },
  },
  XRequestId: {
    description:
      'The request id: the `X-Request-Id` the caller sent when it is 1 to 128 characters of `A-Z a-z 0-9 . _ : -`, otherwise a new UUID. Every log line of the request carries it.',
    schema: { type: 'string' },
  },
  Link: {
    description:
      'On a delta page with more to read now (`hasMore`) and on a diff page with a `next`: `<URL>; rel="next"` (RFC 8288), the request for the page that follows (the body\'s `cursor` or `next` and the same `limit`), so a client can ask for it before reading this body.',
    schema: { type: 'string' },
  },
  WwwAuthenticate: {
    description: 'Bearer challenge, identical for every authentication failure.',
    schema: { type: 'string' },
  },
};
const headerRef = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
const rateHeaders = {
  'RateLimit-Limit': headerRef('RateLimitLimit'),
  'RateLimit-Remaining': headerRef('RateLimitRemaining'),
  'RateLimit-Reset': headerRef('RateLimitReset'),
  'RateLimit-Policy': headerRef('RateLimitPolicy'),
  RateLimit: headerRef('RateLimit'),
};

/** Error statuses every authenticated operation can answer, whatever it does. */
function commonErrors(op: RestOperation): Record<number, { description: string; headers?: JsonObject }> {
  const protectedRead = op.protection(undefined) === 'protected';
  const statuses: Record<number, { description: string; headers?: JsonObject }> = {
    401: {
      description: 'Missing, malformed, unknown, revoked or expired key (one response for all)',
      headers: { 'WWW-Authenticate': headerRef('WwwAuthenticate') },
    },
    429: {
      description: 'More requests in 60 seconds than this key may make (REST and MCP together)',
      headers: { 'Retry-After': headerRef('RetryAfter'), ...rateHeaders },
    },
    500: {
      description: 'Unexpected failure (code `unavailable`); no details are disclosed',
      headers: { 'Retry-After': headerRef('RetryAfter') },
    },
    503: {
      description: protectedRead
        ? 'Rate protection is unavailable (Retry-After: 60), or the archive could not be read (retryable)'
        : 'The archive could not be read (retryable)',
      headers: { 'Retry-After': headerRef('RetryAfter') },
    },
  };
  if (op.request.query || op.request.params || op.request.body)
    statuses[400] = { description: 'Invalid or unknown parameter or body (the message names it)' };
  return statuses;
}

/** `/v1/calltracker/calls/:id` → `/calltracker/calls/{id}` (relative to the server URL `/v1`). */
export function openApiPath(fastifyPath: string): string {
  if (!fastifyPath.startsWith(`${API_BASE_PATH}/`))
    throw new Error(`operation path ${fastifyPath} is outside ${API_BASE_PATH}`);
  return fastifyPath.slice(API_BASE_PATH.length).replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** What each tag groups, shown as the section intro on /docs (an undescribed tag fails the lint test). */
const TAG_DESCRIPTIONS: Record<string, string> = {
  projects:
    "The board of tracked projects: pages of 50 newest first, delta sync for mirrors (`since`, then `cursor`), one project with its dossier and optional context, the project's research asks and its write history.",
  search:
    'Find a project by id, handle, contract (`0x…`, base58, `chain:contract`), website or social profile. Reads only.',
  calls: "Stored call records: who called which token and when, with the caller's thesis, cursor-paged by `next`.",
  pulse:
    'Short news cards, one current card per beat (launches, funding, listings, security, on-chain, social, infrastructure, policy).',
  'thesis feed':
    'A private, shared snapshot of recent theses about a contract; for linked, allowlisted key owners only. POST asks for one (200 when fresh, 202 when queued), GET reads it.',
};

/**
 * The OpenAPI 3.1 document of the REST interface, generated from the same zod schemas that validate
 * requests and shape responses (request parameters as input, responses as output, JSON Schema 2020-12).
 */
export function buildOpenApiDocument(operations: readonly RestOperation[]): OpenApiDocument {
  const registry = z.registry<{ id: string }>();
  const names = new Map<z.ZodType, string>();
  const name = (schema: z.ZodType, fallback: string): string => {
    const known = names.get(schema);
    if (known) return known;
    registry.add(schema, { id: fallback });
    names.set(schema, fallback);
    return fallback;
  };
  for (const [schema, id] of NAMED_SCHEMAS) name(schema, id);

  const paths: OpenApiDocument['paths'] = {};
  const tags = new Set<string>();
  for (const op of operations) {
    const responses: Record<string, JsonObject> = {};
    for (const [status, response] of Object.entries(op.responses)) {
      const id = name(response.schema, `${upperFirst(op.operationId)}Response${status === '200' ? '' : status}`);
      const examples = OPERATION_EXAMPLES[op.operationId]?.[Number(status)];
      const read = op.method === 'GET' && status === '200' && op.produces !== 'text/event-stream';
      responses[status] = {
        description: response.description,
        headers: {
          ...rateHeaders,
          'Cache-Control': headerRef('CacheControl'),
          ...(read ? { ETag: headerRef('ETag') } : {}),
          ...(op.linksNext && status === '200' ? { Link: headerRef('Link') } : {}),
          'X-Request-Id': headerRef('XRequestId'),
        },
        content:
          op.produces === 'text/event-stream'
            ? {
                // OpenAPI 3.1 cannot type a stream's items: the body is text, and each event's data is the named schema.
                'text/event-stream': {
                  schema: {
                    type: 'string',
                    description: `Server-sent events; the data of each event is one ${id} (JSON).`,
                  },
                  'x-event-data': { $ref: SCHEMA_REF(id) },
                  ...(examples ? { examples } : {}),
                },
              }
            : { 'application/json': { schema: { $ref: SCHEMA_REF(id) }, ...(examples ? { examples } : {}) } },
      };
    }
    // A change stream is not revalidated: it has no ETag and never answers 304.
    if (op.method === 'GET' && op.produces !== 'text/event-stream') {
      responses['304'] = {
        description:
          'Not modified: `If-None-Match` holds the current ETag. No body; counted against the budget like any request.',
        headers: {
          ...rateHeaders,
          ETag: headerRef('ETag'),
          'Cache-Control': headerRef('CacheControl'),
          'X-Request-Id': headerRef('XRequestId'),
        },
      };
    }
    const errorId = name(op.errorSchema ?? errorSchema, `${upperFirst(op.operationId)}Error`);
    const errorStatuses: Record<number, { description: string; headers?: JsonObject }> = { ...commonErrors(op) };
    for (const [status, description] of Object.entries(op.errors)) {
      errorStatuses[Number(status)] = { ...errorStatuses[Number(status)], description };
    }
    for (const [status, error] of Object.entries(errorStatuses).sort(([a], [b]) => Number(a) - Number(b))) {
      const example = ERROR_EXAMPLES[Number(status)];
      responses[status] = {
        description: error.description,
        ...(error.headers ? { headers: error.headers } : {}),
        content: {
          'application/json': {
            schema: { $ref: SCHEMA_REF(errorId) },
            ...(example ? { examples: { [status]: example } } : {}),
          },
        },
      };
    }
    for (const tag of op.tags) tags.add(tag);
    const path = openApiPath(op.path);
    paths[path] ??= {};
    paths[path][op.method.toLowerCase()] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: op.tags,
      parameters: parametersOf(op),
      ...(op.request.body ? { requestBody: requestBodyOf(op.request.body) } : {}),
      responses,
    };
  }

  const rendered = z.toJSONSchema(registry, { target: 'draft-2020-12', io: 'output', uri: SCHEMA_REF });
  const schemas: Record<string, JsonObject> = {};
  const byId = new Map([...names].map(([schema, id]) => [id, schema]));
  for (const [id, schema] of Object.entries(rendered.schemas)) {
    const { $schema: _dialect, $id: _id, ...rest } = schema as JsonObject;
    const source = byId.get(id);
    if (source) annotateDescriptions(source, rest);
    schemas[id] = rest;
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'pulseboard read API',
      version: INTERFACE_VERSION,
      contact: { name: 'The operators of this pulseboard instance (API keys are issued by hand on request)' },
      license: { name: 'Proprietary; for key holders of this instance' },
      description:
        'Read-only JSON over a board of tracked projects, their research dossiers, pulse cards, stored call records and a private thesis feed. Every operation needs `Authorization: Bearer <API key>`; the same key opens the tool-protocol endpoint at /mcp. Errors are `{error: {code, message}}`. This document (/v1/openapi.json) and the docs page (/docs) are public.',
    },
    servers: [{ url: API_BASE_PATH, description: 'This host; every path below is relative to /v1' }],
    security: [{ bearerAuth: [] }],
    tags: [...tags].map((name) => ({
      name,
      ...(TAG_DESCRIPTIONS[name] === undefined ? {} : { description: TAG_DESCRIPTIONS[name] }),
    })),
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key (`pbk_…`), issued by hand on request.' },
      },
      headers: HEADERS,
    },
  };
}
