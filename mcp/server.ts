import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { z } from 'zod';
import type { Caller } from '../service/caller.ts';
import { errorSchema } from '../readmodels/schemas.ts';
import { errors, type ServiceError } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import { parseParams } from '../service/requests/params.ts';
import { toolFailure, toolSuccess } from './results.ts';
import type { Tool } from './tools.ts';

export const SERVER_INFO = { name: 'pulseboard', version: '1.0.0' } as const;

const INSTRUCTIONS =
  'A board of tracked crypto projects with research dossiers, and a research assistant to ask about them. ' +
  'Every tool reads, except ask_researcher (appends a request) and request_thesis_feed. Match projects on id, never on handle. ' +
  'Failures are tool errors carrying {error: {code, message}} (codes: unauthorized, forbidden, rate_limited, bad_request, not_found, conflict, unavailable). ' +
  'Each HTTP request counts once against the per-key budget (60 per 60 seconds by default) shared with the REST interface.';

/** The authenticated caller travels as AuthInfo (DESIGN §8); `token` holds the key id, never the key. */
export function authInfoFor(caller: Caller): AuthInfo {
  return { token: caller.keyId, clientId: caller.keyId, scopes: [], extra: { caller } };
}

const callerSchema = z.object({ keyId: z.string().min(1), owner: z.string().min(1) });

function callerOf(authInfo: AuthInfo | undefined): Caller | null {
  const parsed = callerSchema.safeParse(authInfo?.extra?.caller);
  return parsed.success ? parsed.data : null;
}

type JsonSchema = Record<string, unknown>;

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io });
  return rest;
}

/**
 * A schema the SDK lists as `jsonSchema` (zod merges metadata into the JSON Schema it generates)
 * but that accepts any object. The SDK answers a value that fails a registered schema with plain
 * text, outside the `{error: {code, message}}` envelope; so the handlers validate arguments
 * against the real schema themselves.
 */
const listedAs = (jsonSchema: JsonSchema): z.ZodObject => z.looseObject({}).meta(jsonSchema);

/** The tool's strict camelCase input, as tools/list shows it. */
const inputListing = (tool: Tool): z.ZodObject => listedAs(jsonSchemaOf(tool.input.schema, 'input'));

/**
 * The REST response schema or the error envelope. Error results carry the envelope as
 * structured content, and SDK 1.x clients validate that against the output schema even on
 * `isError` results (typescript-sdk issue #1943), so the listed schema admits both shapes.
 */
const outputListing = (tool: Tool): z.ZodObject =>
  listedAs({ type: 'object', anyOf: [jsonSchemaOf(tool.outputSchema, 'output'), jsonSchemaOf(tool.errorSchema ?? errorSchema, 'output')] });

type Listing = { input: z.ZodObject; output: z.ZodObject };
const listings = new WeakMap<Tool, Listing>();
function listingOf(tool: Tool): Listing {
  let listing = listings.get(tool);
  if (!listing) listings.set(tool, (listing = { input: inputListing(tool), output: outputListing(tool) }));
  return listing;
}

export type ServerOptions = {
  /**
   * Set when the rate gate refused this HTTP request after authenticating it: every tool call
   * in it answers this error as a tool error, so an agent reads how long to wait.
   */
  refusal?: ServiceError;
};

/** A new server per HTTP request: stateless Streamable HTTP transports are single-use. */
export function createMcpServer(services: Services, toolTable: readonly Tool[], options: ServerOptions = {}): McpServer {
  const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS });
  for (const tool of toolTable) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: listingOf(tool).input,
        outputSchema: listingOf(tool).output,
        annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: false, idempotentHint: tool.readOnly, openWorldHint: false },
      },
      async (args, extra) => {
        if (options.refusal) return toolFailure(options.refusal);
        const caller = callerOf(extra.authInfo);
        if (!caller) return toolFailure(errors.unauthorized());
        const parsed = parseParams(tool.input.schema, args);
        if (!parsed.ok) return toolFailure(errors.badRequest(parsed.message));
        // The service re-validates under the REST names; the caller's original values are passed on.
        const result = await tool.call(services, caller, tool.input.toRest(args));
        if (!result.ok) return toolFailure({ ...result.error, message: tool.input.renameInMessage(result.error.message) });
        return toolSuccess(result.value);
      },
    );
  }
  return server;
}
