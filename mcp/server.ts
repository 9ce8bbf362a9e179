import {
  InitializeRequestSchema,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { Caller } from '../service/caller.ts';
import { errors, type ServiceError } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import { parseParams } from '../service/requests/params.ts';
import { toolListing } from './listing.ts';
import { serializedToolSuccess, toolFailure } from './results.ts';
import type { Tool } from './tools.ts';

export const SERVER_INFO = { name: 'pulseboard', version: '1.0.0' } as const;

/**
 * What the server can honour on a stateless POST-only endpoint: tools, and nothing it would have
 * to push later (no listChanged: there is no stream to announce a change on).
 */
export const CAPABILITIES = { tools: {} } as const;

export const INSTRUCTIONS =
  'A board of tracked crypto projects with research dossiers, and a research assistant to ask about them. ' +
  'Every tool reads, except ask_researcher (appends a request) and request_thesis_feed. Match projects on id, never on handle. ' +
  'Every field a result schema names is present in every result (null when unknown). ' +
  'Failures are tool errors carrying {error: {code, message}} (codes: unauthorized, forbidden, rate_limited, bad_request, not_found, conflict, unavailable); ' +
  'when waiting helps, the error says how long and carries _meta.retryAfterSeconds. ' +
  'Each tools/call counts once against the per-key budget (60 per 60 seconds by default) shared with the REST interface; ' +
  'initialize, tools/list, ping and notifications have a budget of their own. Keep results small with limit (and maxBytes on list_calltracker_calls).';

/** One JSON-RPC response, already serialized (the transport writes it as is): its text or its UTF-8 bytes. */
export type SerializedResponse = string | Buffer;

/** The part of a request's logger a tool call uses. */
export type ErrorLog = { error(fields: { err: { type: string } }, message: string): void };

/**
 * Who sent this HTTP request, or why the rate gate refused it after authenticating it: then every
 * tool call in it answers that error as a tool error, so an agent reads how long to wait.
 */
export type RequestContext = ({ caller: Caller; refusal?: undefined } | { refusal: ServiceError }) & {
  /** Where an error a tool threw is reported, by its name only (never its message, which may hold input). */
  log?: ErrorLog;
};

export type McpEndpoint = {
  /** Answers one JSON-RPC request; notifications and responses get nothing back. */
  answer(message: JSONRPCRequest, context: RequestContext): Promise<SerializedResponse>;
  /** The serialized tools/list result (for tests and the size check). */
  readonly toolsListResult: string;
};

const JSONRPC_METHOD_NOT_FOUND = -32601;
const JSONRPC_INVALID_PARAMS = -32602;

/** An id as JSON: a number is written as `String` writes it (the same text for every number JSON can carry). */
const idJson = (id: RequestId): string => (typeof id === 'number' ? String(id) : JSON.stringify(id));

/** The SDK's response layout, `{result, jsonrpc, id}`, so the bytes clients saw before stay the same. */
const resultResponse = (id: RequestId, resultJson: string): string => `{"result":${resultJson},"jsonrpc":"2.0","id":${idJson(id)}}`;

/** A tool error (never a JSON-RPC error). */
const failureResponse = (id: RequestId, error: ServiceError): string => resultResponse(id, JSON.stringify(toolFailure(error)));

/** The service's refusal of a tool call, its REST parameter names replaced by the tool's. */
const renamedFailure = (id: RequestId, tool: Tool, error: ServiceError): string => failureResponse(id, { ...error, message: tool.input.renameInMessage(error.message) });

const errorResponse = (id: RequestId, code: number, message: string, data?: unknown): string =>
  JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The MCP server, built once: the tool listing and the initialize result are serialized at
 * start-up, and each request is answered by a table look-up and the tool's service call.
 * Stateless Streamable HTTP keeps nothing between requests, so one endpoint serves them all.
 */
export function createMcpEndpoint(services: Services, toolTable: readonly Tool[]): McpEndpoint {
  const byName = new Map(toolTable.map((tool) => [tool.name, tool]));
  const toolNames = toolTable.map((tool) => tool.name).join(', ');
  const toolsListResult = JSON.stringify({ tools: toolTable.map(toolListing) });
  const initializeResults = new Map(
    SUPPORTED_PROTOCOL_VERSIONS.map((version) => [
      version,
      JSON.stringify({ protocolVersion: version, capabilities: CAPABILITIES, serverInfo: SERVER_INFO, instructions: INSTRUCTIONS }),
    ]),
  );

  /** The response to a tools/call: a tool's result, or a tool error (never a JSON-RPC error). */
  async function callTool(id: RequestId, params: unknown, context: RequestContext): Promise<SerializedResponse> {
    if (context.refusal !== undefined) return failureResponse(id, context.refusal);
    const name = isPlainObject(params) ? params.name : undefined;
    if (typeof name !== 'string') {
      return failureResponse(id, errors.badRequest(`tools/call needs params.name, one of: ${toolNames}; and params.arguments, an object of named arguments`));
    }
    const tool = byName.get(name);
    // The name is not echoed: it is input, and the list of real names is what helps.
    if (!tool) return failureResponse(id, errors.notFound(`no such tool; the tools are: ${toolNames} (tools/list describes them)`));
    const args = (params as Record<string, unknown>).arguments ?? {};
    if (!isPlainObject(args)) {
      return failureResponse(
        id,
        errors.badRequest(`params.arguments must be an object of named arguments, e.g. {"name": "${tool.name}", "arguments": {…}}; see the tool's inputSchema in tools/list`),
      );
    }
    // An unknown name is refused by the input's schema, with its message; the service checks the rest.
    if (!tool.validatedByService || !tool.input.namesKnown(args)) {
      const parsed = parseParams(tool.input.schema, args);
      if (!parsed.ok) return failureResponse(id, errors.badRequest(tool.input.renameInMessage(parsed.message)));
    }
    try {
      // The service re-validates under the REST names; the caller's original values are passed on.
      const rest = tool.input.toRest(args);
      const result = await tool.call(services, context.caller, rest);
      return result.ok ? resultResponse(id, serializedToolSuccess(result.value)) : renamedFailure(id, tool, result.error);
    } catch (error) {
      return unexpected(id, context, error);
    }
  }

  /** A tool call that failed in a way no service result says: a tool error to retry, its type reported. */
  function unexpected(id: RequestId, context: RequestContext, error: unknown): SerializedResponse {
    context.log?.error({ err: { type: (error as Error)?.name ?? 'unknown' } }, 'mcp tool call failed');
    return resultResponse(id, JSON.stringify(toolFailure({ status: 500, code: 'unavailable', message: 'Unexpected failure; retry later.', retryAfter: 5 })));
  }

  function protocolAnswer(id: RequestId, method: string, message: JSONRPCRequest): SerializedResponse {
    switch (method) {
      case 'initialize': {
        const parsed = InitializeRequestSchema.safeParse(message);
        if (!parsed.success) {
          return errorResponse(id, JSONRPC_INVALID_PARAMS, 'initialize needs params.protocolVersion (a string), params.capabilities (an object) and params.clientInfo ({name, version})');
        }
        // The client's version when this server speaks it, else the newest one it does (the client then decides).
        const requested = parsed.data.params.protocolVersion;
        return resultResponse(id, initializeResults.get(requested) ?? initializeResults.get(LATEST_PROTOCOL_VERSION)!);
      }
      case 'ping':
        return resultResponse(id, '{}');
      case 'tools/list':
        return resultResponse(id, toolsListResult);
      default:
        return errorResponse(id, JSONRPC_METHOD_NOT_FOUND, 'Method not found');
    }
  }

  return {
    toolsListResult,
    async answer(message, context) {
      const { id, method } = message;
      if (method === 'tools/call') return callTool(id, message.params, context);
      return protocolAnswer(id, method, message);
    },
  };
}
