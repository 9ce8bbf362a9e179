import { McpServer, type CallToolResult, type McpRequestContext } from '@modelcontextprotocol/server';
import { errors, type ServiceError } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import { toolConfig } from './listing.ts';
import { registerResources, resourceTemplates } from './resources.ts';
import type { Tool } from './tools.ts';
import { envelopeOf, retryAfterSeconds, type RequestContext, type Surface } from './request-context.ts';

/** Re-exported so the plugin keeps one import; resources.ts takes them from request-context.ts (no circle). */
export { envelopeOf, retryAfterSeconds, type RequestContext, type Surface };

/** A successful tool result: the REST body as structured content and, byte for byte, as text. */
export const toolSuccess = (body: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(body) }],
  structuredContent: body,
});

/** A failed tool result: the envelope in both blocks, a wait also as `_meta.retryAfterSeconds` for programs. */
export function toolFailure(error: ServiceError): CallToolResult {
  const [body, seconds] = [envelopeOf(error), retryAfterSeconds(error)];
  const meta = seconds === undefined ? {} : { _meta: { retryAfterSeconds: seconds } };
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true, ...meta };
}

export const SERVER_INFO = { name: 'pulseboard', version: '1.0.0' } as const;

export const INSTRUCTIONS =
  'A board of tracked crypto projects with research dossiers, and a research assistant to ask about them. ' +
  'Every tool reads, except ask_researcher (appends a request) and request_thesis_feed. Match projects on id, never on handle. ' +
  'Every field a result schema names is present in every result (null when unknown), except asOf and changes: only when asked for. ' +
  'Failures are tool errors carrying {error: {code, message}} (codes: unauthorized, forbidden, rate_limited, bad_request, not_found, conflict, unavailable); ' +
  'when waiting helps, the error says how long and carries _meta.retryAfterSeconds. ' +
  'Each tools/call and resources/read counts once against the per-key budget (60 per 60 seconds by default) shared with the REST interface; ' +
  'other protocol messages have a budget of their own. Keep results small with limit, view "summary" (list_projects, sync_projects) and maxBytes (list_calltracker_calls). ' +
  'Resources pulseboard://projects/{id}, pulseboard://calls/{id} and pulseboard://pulse/{beat} hold the same JSON as get_project, get_calltracker_call and get_pulse.';

export const WHOLE_SURFACE: Surface = { tools: 'all', resources: true };

/** Cacheable results (2026-07-28): what lists is fixed for a deployment; what reads is per key and live. */
const LISTS = { ttlMs: 3_600_000, cacheScope: 'public' } as const;
const CACHE_HINTS = {
  ...{ 'server/discover': LISTS, 'tools/list': LISTS, 'resources/list': LISTS, 'resources/templates/list': LISTS },
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
} as const;

/** How the SDK starts the message of arguments it refused. */
const SDK_ARGUMENTS_PREFIX = /^(?:Input validation error: )?Invalid arguments for tool [^:]*: /;

/** The protocol versions docs/api-guide.md lists: the 2025 handshake counter-offers 2025-11-25 to an older client. */
export const PROTOCOL_VERSIONS = ['2026-07-28', '2025-11-25', '2025-06-18'];

/**
 * The SDK's per-request server factory: what does not depend on the request (schemas, their JSON
 * Schema, resource templates) is made once; a request gets a fresh McpServer with what its surface
 * names registered, in the table's order, its context (found by the web Request) closed over.
 */
export function createMcpServerFactory(
  services: Services,
  toolTable: readonly Tool[],
  contextOf: (request: Request | undefined) => RequestContext | undefined,
) {
  const prepared = toolTable.map((tool) => ({ tool, config: toolConfig(tool) }));
  const byName = new Map(prepared.map((entry) => [entry.tool.name, entry]));
  const templates = resourceTemplates(services);

  async function callTool(tool: Tool, context: RequestContext | undefined, args: Record<string, unknown>) {
    if (context === undefined) return toolFailure(errors.unauthorized());
    if (context.refusal !== undefined) return toolFailure(context.refusal);
    try {
      const result = await tool.call(services, context.caller, tool.input.toRest(args));
      return result.ok ? toolSuccess(result.value) : toolFailure(result.error);
    } catch (error) {
      // A failure no service result says: a tool error to retry, reported by its type only (its message may hold input).
      context.log?.error({ err: { type: (error as Error)?.name ?? 'unknown' } }, 'mcp tool call failed');
      return toolFailure({
        status: 500,
        code: 'unavailable',
        message: 'Unexpected failure; retry later.',
        retryAfter: 5,
      });
    }
  }

  return (ctx: McpRequestContext): McpServer => {
    const context = contextOf(ctx.requestInfo);
    const modern = ctx.era === 'modern';
    const server = new McpServer(SERVER_INFO, {
      instructions: INSTRUCTIONS,
      // Subscriptions need a stream that outlives the request: only the 2026-07-28 listen has one.
      capabilities: {
        tools: { listChanged: false },
        resources: modern ? { subscribe: true, listChanged: true } : { listChanged: false },
        completions: {},
      },
      cacheHints: CACHE_HINTS,
      maxToolInputElements: 200,
      supportedProtocolVersions: PROTOCOL_VERSIONS,
    });
    // The SDK answers arguments it refuses (its schema check, the element limit) as a bare text: ours is
    // the envelope, with the words REST's 400 has (the SDK's prefix names the tool the agent just called).
    (server as unknown as { createToolError(message: string): CallToolResult }).createToolError = (message) =>
      toolFailure(errors.badRequest(message.replace(SDK_ARGUMENTS_PREFIX, '')));
    const surface = context?.surface ?? WHOLE_SURFACE;
    const named = surface.tools === 'all' ? prepared : surface.tools.flatMap((name) => byName.get(name) ?? []);
    for (const { tool, config } of named)
      server.registerTool(tool.name, config, (args: Record<string, unknown>) => callTool(tool, context, args));
    if (surface.resources) registerResources(server, services, templates, context);
    return server;
  };
}
