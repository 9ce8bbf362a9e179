import type { IncomingMessage } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { sendError } from '../api/errors.ts';
import type { ServiceError } from '../service/errors.ts';
import type { Protection } from '../service/guard.ts';
import type { Services } from '../service/services.ts';
import { authInfoFor, createMcpServer } from './server.ts';
import { tools as toolTable, type Tool } from './tools.ts';

export const MCP_PATH = '/mcp';

export type McpPluginOptions = { services: Services; tools?: readonly Tool[] };

type JsonRpcRequest = { method?: unknown; params?: { name?: unknown; arguments?: unknown } };

const messagesOf = (body: unknown): JsonRpcRequest[] =>
  (Array.isArray(body) ? body : [body]).filter((m): m is JsonRpcRequest => typeof m === 'object' && m !== null);

const isToolCall = (m: JsonRpcRequest): boolean => m.method === 'tools/call';

/**
 * The budget class of one HTTP request: a tools/call counts with its tool's class (computed from
 * its arguments as for the REST twin); anything else (initialize, tools/list, notifications) is
 * basic. A batch takes the strictest class of its members.
 */
export function protectionOf(services: Services, tools: readonly Tool[], body: unknown): Protection {
  for (const message of messagesOf(body)) {
    if (!isToolCall(message)) continue;
    const tool = tools.find((t) => t.name === message.params?.name);
    const args = message.params?.arguments;
    if (!tool) continue;
    const rest = tool.input.toRest(typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {});
    if (tool.protection(services, rest) === 'protected') return 'protected';
  }
  return 'basic';
}

function setRawHeaders(reply: FastifyReply, headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) reply.raw.setHeader(name, value);
}

/**
 * `/mcp`: stateless Streamable HTTP on the REST app's Fastify instance. Each POST is
 * authenticated and counted by the same guard as REST (one request of the per-key budget per
 * HTTP request), then handed to a fresh McpServer and transport.
 */
export const mcpPlugin: FastifyPluginAsync<McpPluginOptions> = async (app, options) => {
  const { services } = options;
  const tools = options.tools ?? toolTable;

  app.post(MCP_PATH, async (request, reply) => {
    reply.header('cache-control', 'private, no-store');
    const admitted = await services.guard.admit(request.headers.authorization, protectionOf(services, tools, request.body));
    let refusal: ServiceError | undefined;
    let auth: AuthInfo | undefined;
    if (admitted.ok) {
      auth = authInfoFor(admitted.value.caller);
      setRawHeaders(reply, admitted.value.headers);
    } else {
      const { error, headers } = admitted.refused;
      const messages = messagesOf(request.body);
      // A refused tool call is answered as a tool error (spec §4.6: "a tool error asking the
      // caller to wait"); an authentication failure, or a refused message that is not a tool
      // call, gets the same HTTP error REST gives.
      if (error.status === 401 || messages.length === 0 || !messages.every(isToolCall)) return sendError(reply, error, headers);
      refusal = error;
      setRawHeaders(reply, headers);
      if (error.retryAfter !== undefined) reply.raw.setHeader('retry-after', String(Math.max(1, Math.ceil(error.retryAfter))));
    }
    reply.raw.setHeader('cache-control', 'private, no-store');

    const server = createMcpServer(services, tools, refusal ? { refusal } : {});
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    reply.hijack();
    (request.raw as IncomingMessage & { auth?: AuthInfo }).auth = auth;
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (error) {
      request.log.error({ err: { type: (error as Error)?.name } }, 'mcp request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        reply.raw.end(JSON.stringify({ error: { code: 'unavailable', message: 'Unexpected failure; retry later.' } }));
      }
    }
  });

  // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
  app.route({
    method: ['GET', 'DELETE', 'PUT', 'PATCH'],
    url: MCP_PATH,
    handler: (request, reply) => {
      reply.header('allow', 'POST');
      return sendError(reply, {
        status: 405,
        code: 'bad_request',
        message: `method ${request.method} is not allowed on ${MCP_PATH}: this endpoint is stateless Streamable HTTP; send JSON-RPC messages with POST`,
      });
    },
  });
};
