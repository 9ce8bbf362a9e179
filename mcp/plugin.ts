import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { credentialMemoOf } from '../transport/credential-memo.ts';
import { sendError } from '../transport/send-error.ts';
import type { Admission, Budget, Protection } from '../service/guard.ts';
import type { Services } from '../service/services.ts';
import { createOriginCheck } from './origin.ts';
import { createMcpEndpoint, type RequestContext, type SerializedResponse } from './server.ts';
import { tools as toolTable, type Tool } from './tools.ts';

export const MCP_PATH = '/mcp';

export type McpPluginOptions = { services: Services; tools?: readonly Tool[] };

type JsonRpcRequest = { method?: unknown; params?: { name?: unknown; arguments?: unknown } };

const isObject = (m: unknown): m is JsonRpcRequest => typeof m === 'object' && m !== null;

const messagesOf = (body: unknown): JsonRpcRequest[] => (Array.isArray(body) ? body.filter(isObject) : isObject(body) ? [body] : []);

const isToolCall = (m: JsonRpcRequest): boolean => m.method === 'tools/call';

/**
 * The budget class of one HTTP request: a tools/call counts with its tool's class (computed from
 * its arguments as for the REST twin); anything else (initialize, tools/list, notifications) is
 * basic. A batch takes the strictest class of its members.
 */
export function protectionOf(services: Services, tools: readonly Tool[], body: unknown): Protection {
  return protectionAmong(services, toolsByName(tools), messagesOf(body));
}

const toolsByName = (tools: readonly Tool[]): ReadonlyMap<string, Tool> => new Map(tools.map((tool) => [tool.name, tool]));

function protectionAmong(services: Services, byName: ReadonlyMap<string, Tool>, messages: readonly JsonRpcRequest[]): Protection {
  for (const message of messages) {
    if (!isToolCall(message)) continue;
    const name = message.params?.name;
    const tool = typeof name === 'string' ? byName.get(name) : undefined;
    const args = message.params?.arguments;
    if (!tool) continue;
    const rest = tool.input.toRest(typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {});
    if (tool.protection(services, rest) === 'protected') return 'protected';
  }
  return 'basic';
}

/**
 * Which budget one HTTP request spends: a request holding a tools/call spends the requests budget
 * shared with REST; one holding only protocol messages (initialize, notifications, tools/list,
 * ping, or anything else that reads no data) spends the protocol budget.
 */
const budgetAmong = (messages: readonly JsonRpcRequest[]): Budget => (messages.some(isToolCall) ? 'requests' : 'protocol');

/** The SDK transport's JSON-RPC error layout for transport-level refusals (same bytes as before). */
function sendRpcError(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply.code(status).header('content-type', 'application/json').send(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** `application/json` with or without parameters (charset), as a parsed media type. */
const isJsonContentType = (value: string | undefined): boolean =>
  value === 'application/json' || value?.split(';')[0]?.trim().toLowerCase() === 'application/json';

/** A batch's responses as one JSON array. */
function batchOf(answers: readonly SerializedResponse[]): SerializedResponse {
  if (answers.every((answer) => typeof answer === 'string')) return `[${answers.join(',')}]`;
  const pieces: Buffer[] = [];
  answers.forEach((answer, i) => pieces.push(Buffer.from(i === 0 ? '[' : ','), typeof answer === 'string' ? Buffer.from(answer, 'utf8') : answer));
  pieces.push(Buffer.from(']'));
  return Buffer.concat(pieces);
}

/** The SDK transport's batch bound. */
const MAX_BATCH_SIZE = 100;

const isRequest = (message: JSONRPCMessage): message is JSONRPCRequest => 'method' in message && 'id' in message;

const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * The common message, a request without `_meta`, checked without the SDK's schema: only members of
 * a request, `jsonrpc` "2.0", an integer or string id, a string method and, if any, params that are
 * an object. What passes is what JSONRPCMessageSchema accepts as a request, unchanged; anything
 * else goes through the schema.
 */
export function isPlainRequest(raw: unknown): raw is JSONRPCRequest {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return false;
  const message = raw as Record<string, unknown>;
  // Inherited names count too (a stricter test, sent to the schema); a JSON body has none.
  for (const key in message) if (!REQUEST_MEMBERS.has(key)) return false;
  const { jsonrpc, id, method, params } = message;
  if (jsonrpc !== '2.0' || typeof method !== 'string') return false;
  if (typeof id !== 'string' && !Number.isInteger(id)) return false;
  if (params === undefined) return !('params' in message);
  return typeof params === 'object' && params !== null && !Array.isArray(params) && !('_meta' in params);
}

/**
 * `/mcp`: stateless Streamable HTTP on the REST app's Fastify instance. Each POST is checked for
 * DNS rebinding, authenticated and counted by the same guard as REST (tool calls against the
 * requests budget, protocol messages against their own), then answered by the one endpoint built
 * at start-up. JSON responses only: nothing is ever streamed.
 */
export const mcpPlugin: FastifyPluginAsync<McpPluginOptions> = async (app, options) => {
  const { services } = options;
  const tools = options.tools ?? toolTable;
  const endpoint = createMcpEndpoint(services, tools);
  const byName = toolsByName(tools);
  const originCheck = createOriginCheck(services.config);

  app.post(MCP_PATH, async (request, reply) => {
    reply.header('cache-control', 'private, no-store');
    const foreign = originCheck({ host: request.headers.host, origin: request.headers.origin });
    if (foreign) return sendError(reply, foreign);

    const received = messagesOf(request.body);
    const admitted = await services.guard.admit(
      request.headers.authorization,
      protectionAmong(services, byName, received),
      budgetAmong(received),
      credentialMemoOf(request.raw.socket),
    );
    return answerAdmitted(request, reply, admitted, received);
  });

  async function answerAdmitted(
    request: FastifyRequest,
    reply: FastifyReply,
    admitted: Admission,
    received: readonly JsonRpcRequest[],
  ): Promise<FastifyReply> {
    if (!admitted.ok) {
      const { error, headers } = admitted.refused;
      // A refused tool call is answered as a tool error ("a tool error asking the
      // caller to wait"); an authentication failure, or a refused message that is not a tool
      // call, gets the same HTTP error REST gives.
      if (error.status === 401 || received.length === 0 || !received.every(isToolCall)) return sendError(reply, error, headers);
      reply.headers(headers);
      if (error.retryAfter !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfter))));
    } else {
      reply.headers(admitted.value.headers);
    }

    const body = request.body;
    const accept = request.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return sendRpcError(reply, 406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    if (!isJsonContentType(request.headers['content-type'])) {
      return sendRpcError(reply, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    }
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) {
      return sendRpcError(reply, 400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
    }
    const messages: JSONRPCMessage[] = [];
    for (const raw of Array.isArray(body) ? body : [body]) {
      if (isPlainRequest(raw)) {
        messages.push(raw);
        continue;
      }
      const parsed = JSONRPCMessageSchema.safeParse(raw);
      if (!parsed.success) return sendRpcError(reply, 400, -32700, 'Parse error: Invalid JSON-RPC message');
      messages.push(parsed.data);
    }
    const initializing = messages.some((m) => isRequest(m) && m.method === 'initialize');
    if (initializing && messages.length > 1) {
      return sendRpcError(reply, 400, -32600, 'Invalid Request: Only one initialization request is allowed');
    }
    const version = request.headers['mcp-protocol-version'];
    if (!initializing && typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return sendRpcError(
        reply,
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      );
    }

    const requests = messages.filter(isRequest);
    // Notifications and responses only: accepted, nothing to answer.
    if (requests.length === 0) return reply.code(202).send();

    const context: RequestContext = admitted.ok ? { caller: admitted.value.caller, log: request.log } : { refusal: admitted.refused.error, log: request.log };
    const answer = Array.isArray(body)
      ? batchOf(await Promise.all(requests.map(async (message) => endpoint.answer(message, context))))
      : await endpoint.answer(requests[0]!, context);
    return reply.code(200).header('content-type', 'application/json').send(answer);
  }

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
