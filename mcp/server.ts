import {
  createMcpHandler,
  isJsonContentType,
  isLegacyRequest,
  McpServer,
  WebStandardStreamableHTTPServerTransport,
  type CallToolResult,
  type McpRequestContext,
} from '@modelcontextprotocol/server';
import { errors, type ServiceError } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import { toolConfig } from './listing.ts';
import { registerResources } from './resources.ts';
import type { Tool } from './tools.ts';
import { envelopeOf, retryAfterSeconds, type ContextOf, type RequestContext } from './request-context.ts';

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
  'A board of tracked crypto projects with research dossiers, and a research assistant to ask about them. Every tool reads, except ask_researcher (appends a request) and request_thesis_feed. Match projects on id, never on handle. Every field a result schema names is present in every result (null when unknown), except asOf and changes: only when asked for. Failures are tool errors carrying {error: {code, message}} (codes: unauthorized, forbidden, rate_limited, bad_request, not_found, conflict, unavailable); when waiting helps, the error says how long and carries _meta.retryAfterSeconds. Each tools/call and resources/read counts once against the per-key budget (60 per 60 seconds by default) shared with the REST interface; other protocol messages have a budget of their own. Keep results small with limit, view "summary" (list_projects, sync_projects) and maxBytes (list_calltracker_calls). Resources pulseboard://projects/{id}, pulseboard://calls/{id} and pulseboard://pulse/{beat} hold the same JSON as get_project, get_calltracker_call and get_pulse.';

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
/** Idle instances kept per era: a burst's worth beyond it is left to the collector, not held for ever. */
const IDLE_MAX = 64;

/**
 * The SDK's server factory, with instances kept between requests (building one cost more than the call),
 * one pool per era (capabilities differ); handlers read their request's context from the SDK's ctx. Reused
 * only when nothing of a client can carry over (test/mcp/pool.test.ts): a 2025 instance that learned one
 * (initialize) is dropped; a 2026-07-28 one serves only envelopes naming clientInfo and clientCapabilities.
 */
function createMcpServerFactory(services: Services, toolTable: readonly Tool[], contextOf: ContextOf) {
  const prepared = toolTable.map((tool) => ({ tool, config: toolConfig(tool) }));
  const idle = { modern: [] as McpServer[], legacy: [] as McpServer[] };

  async function callTool(tool: Tool, context: RequestContext | undefined, args: Record<string, unknown>) {
    if (context === undefined) return toolFailure(errors.unauthorized());
    if (context.refusal !== undefined) return toolFailure(context.refusal);
    try {
      const result = await tool.call(services, context.caller, tool.input.toRest(args));
      return result.ok ? toolSuccess(result.value) : toolFailure(result.error);
    } catch (error) {
      // A failure no service result says: a tool error to retry, reported by its type only (its message may hold input).
      context.log?.error({ err: { type: (error as Error)?.name ?? 'unknown' } }, 'mcp tool call failed');
      return toolFailure(errors.unavailable('Unexpected failure; retry later.', 5));
    }
  }

  function build(modern: boolean): McpServer {
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
    // The SDK answers arguments it refuses (its schema check, the element limit) as a bare text, and has no
    // public hook for it (createToolError is private): ours is the envelope, with the words of REST's 400.
    (server as unknown as { createToolError(message: string): CallToolResult }).createToolError = (message) =>
      toolFailure(errors.badRequest(message.replace(SDK_ARGUMENTS_PREFIX, '')));
    for (const { tool, config } of prepared)
      server.registerTool(tool.name, config, (args: Record<string, unknown>, ctx) =>
        callTool(tool, contextOf(ctx.http?.req), args),
      );
    registerResources(server, services, contextOf);
    return server;
  }

  return (ctx: McpRequestContext): McpServer => {
    const era = ctx.era === 'modern' ? 'modern' : 'legacy';
    const reusable = era === 'legacy' || contextOf(ctx.requestInfo)?.declaresIdentity === true;
    const server = (reusable ? idle[era].pop() : undefined) ?? build(era === 'modern');
    const sdk = server.server;
    // Called once the exchange is answered (an instance the SDK never connects is left to the collector).
    sdk.onclose = () => {
      const learned = sdk.getClientVersion() ?? sdk.getClientCapabilities() ?? sdk.getNegotiatedProtocolVersion();
      if ((era === 'modern' || learned === undefined) && idle[era].length < IDLE_MAX) idle[era].push(server);
    };
    return server;
  };
}

/**
 * Both eras on pooled instances: 2026-07-28 by the SDK's handler; 2025 (as the SDK's isLegacyRequest
 * says) as its stateless fallback serves it, a transport per POST, but answered as JSON, which the 2025
 * transport allows: the fallback's event stream of one message cost more than the call itself.
 */
export function createServing(services: Services, tools: readonly Tool[], contextOf: ContextOf, keepAliveMs: number) {
  const factory = createMcpServerFactory(services, tools, contextOf);
  const handler = createMcpHandler(factory, { legacy: 'reject', keepAliveMs });
  async function fetch(request: Request, parsedBody: unknown, claimed: boolean): Promise<Response> {
    const json = isJsonContentType(request.headers.get('content-type'));
    if (claimed || !json || !(await isLegacyRequest(request, parsedBody)))
      return handler.fetch(request, { parsedBody });
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
    await factory({ era: 'legacy', requestInfo: request }).connect(transport);
    try {
      return await transport.handleRequest(request, { parsedBody });
    } finally {
      await transport.close();
    }
  }
  return { fetch, notify: handler.notify, close: handler.close };
}
