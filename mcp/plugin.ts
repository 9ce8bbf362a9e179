import { createMcpHandler } from '@modelcontextprotocol/server';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Admission, Budget, Protection } from '../service/guard.ts';
import { HEARTBEAT_MS } from '../service/changes.ts';
import type { Services } from '../service/services.ts';
import { credentialMemoOf } from '../transport/credential-memo.ts';
import { sendError } from '../transport/send-error.ts';
import { createOriginCheck } from './origin.ts';
import { authInfoOf, createMcpServerFactory, WHOLE_SURFACE, type RequestContext, type Surface } from './server.ts';
import { createListenSlots, type Listen } from './subscriptions.ts';
import { tools as toolTable, type Tool } from './tools.ts';

export const MCP_PATH = '/mcp';

export type McpPluginOptions = {
  services: Services;
  tools?: readonly Tool[];
  /** Listen streams' heartbeat (15 s) and key re-check (5 s) intervals; tests shorten them. */
  listen?: { keepAliveMs?: number; recheckMs?: number };
};

type JsonRpcMessage = { method?: unknown; params?: { name?: unknown; arguments?: unknown; uri?: unknown } };

const isObject = (m: unknown): m is JsonRpcMessage => typeof m === 'object' && m !== null;

const messagesOf = (body: unknown): JsonRpcMessage[] =>
  Array.isArray(body) ? body.filter(isObject) : isObject(body) ? [body] : [];

/** Messages that read data: each counts against the requests budget shared with REST. */
const readsData = (m: JsonRpcMessage): boolean => m.method === 'tools/call' || m.method === 'resources/read';

const toolsByName = (tools: readonly Tool[]): ReadonlyMap<string, Tool> =>
  new Map(tools.map((tool) => [tool.name, tool]));

/**
 * The budget class of one HTTP request: a tools/call counts with its tool's class (computed from
 * its arguments as for the REST twin), a resources/read with its twin tool's; anything else
 * (initialize, server/discover, lists, notifications) is basic. A batch takes the strictest class.
 */
export function protectionOf(services: Services, tools: readonly Tool[], body: unknown): Protection {
  return protectionAmong(services, toolsByName(tools), messagesOf(body));
}

function protectionAmong(
  services: Services,
  byName: ReadonlyMap<string, Tool>,
  messages: readonly JsonRpcMessage[],
): Protection {
  for (const message of messages) {
    if (message.method === 'resources/read') {
      // A call record carries thesis text: read under get_calltracker_call's class.
      if (typeof message.params?.uri === 'string' && message.params.uri.startsWith('pulseboard://calls/'))
        return 'protected';
      continue;
    }
    if (message.method !== 'tools/call') continue;
    const name = message.params?.name;
    const tool = typeof name === 'string' ? byName.get(name) : undefined;
    const args = message.params?.arguments;
    if (!tool) continue;
    const rest = tool.input.toRest(
      typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {},
    );
    if (tool.protection(services, rest) === 'protected') return 'protected';
  }
  return 'basic';
}

/**
 * Which budget one HTTP request spends: one holding a tools/call or resources/read spends the
 * requests budget shared with REST; one holding only protocol messages spends the protocol budget.
 */
const budgetAmong = (messages: readonly JsonRpcMessage[]): Budget =>
  messages.some(readsData) ? 'requests' : 'protocol';

/** Messages the resource templates answer. */
const RESOURCE_METHODS = new Set([
  'resources/read',
  'resources/list',
  'resources/templates/list',
  'completion/complete',
]);

/**
 * What the server instance serving these messages needs: one tool call needs its tool only, a
 * resource message the resources only. Tool names the table does not hold are left to the SDK's
 * unknown-tool answer, as with the whole surface.
 */
function surfaceOf(body: unknown, messages: readonly JsonRpcMessage[]): Surface {
  if (Array.isArray(body) || messages.length !== 1) return WHOLE_SURFACE;
  const { method, params } = messages[0]!;
  if (method === 'tools/call')
    return { tools: typeof params?.name === 'string' ? [params.name] : [], resources: false };
  if (typeof method === 'string' && RESOURCE_METHODS.has(method)) return { tools: [], resources: true };
  return WHOLE_SURFACE;
}

/** The surface of a whole body, as the route computes it (tests). */
export const surfaceOfBody = (body: unknown): Surface => surfaceOf(body, messagesOf(body));

/** Request headers the SDK reads (content negotiation, protocol version, the 2026-07-28 routing headers). */
const FORWARDED_HEADERS = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name'] as const;

function webRequestOf(request: FastifyRequest, signal: AbortSignal | undefined): Request {
  const headers = new Headers();
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  // The body is handed over parsed (Fastify's parser, with its prototype-poisoning checks): none here.
  return new Request(`http://localhost${MCP_PATH}`, { method: 'POST', headers, ...(signal ? { signal } : {}) });
}

/**
 * `/mcp`: the SDK's handler for both protocol eras (2026-07-28 per request, 2025 through the stateless
 * handshake) on the REST app's Fastify instance. Each POST is checked for DNS rebinding, then
 * authenticated and counted by the same guard as REST (tool calls and resource reads against the
 * requests budget, protocol messages against their own); the caller reaches the tools as the SDK's
 * pass-through authInfo. Bodies are parsed by Fastify's own JSON parser.
 */
export const mcpPlugin: FastifyPluginAsync<McpPluginOptions> = async (app, options) => {
  const { services } = options;
  const tools = options.tools ?? toolTable;
  const byName = toolsByName(tools);
  const originCheck = createOriginCheck(services.config);
  const handler = createMcpHandler(createMcpServerFactory(services, tools), {
    legacy: 'stateless',
    keepAliveMs: options.listen?.keepAliveMs ?? HEARTBEAT_MS,
  });
  const listens = createListenSlots(services, handler.notify, options.listen?.recheckMs);
  app.addHook('onClose', async () => {
    listens.close();
    await handler.close();
  });

  // A body Fastify's parser refuses (not JSON, or a __proto__ / constructor.prototype key) is a JSON-RPC
  // parse error; any other refusal (413, 415, …) is the app's, as on every POST route.
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error.statusCode !== 400) throw error;
    const message =
      error.code === 'PULSEBOARD_FORBIDDEN_KEY'
        ? 'Parse error: the body holds a key that is not accepted (__proto__, or constructor.prototype)'
        : 'Parse error: the body is not valid JSON';
    return reply
      .code(400)
      .header('content-type', 'application/json')
      .send(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message } }));
  });

  // JSON answers are compressed by @fastify/compress like REST's; event streams never are.
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
    received: readonly JsonRpcMessage[],
  ): Promise<FastifyReply> {
    let context: RequestContext;
    if (!admitted.ok) {
      const { error, headers } = admitted.refused;
      // A refused tool call or resource read is answered in the protocol (a tool error asking the caller
      // to wait); an authentication failure, or a refused protocol message, gets the same HTTP error REST gives.
      if (error.status === 401 || received.length === 0 || !received.every(readsData))
        return sendError(reply, error, headers);
      reply.headers(headers);
      if (error.retryAfter !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfter))));
      context = { refusal: error, log: request.log, surface: surfaceOf(request.body, received) };
    } else {
      reply.headers(admitted.value.headers);
      context = { caller: admitted.value.caller, log: request.log, surface: surfaceOf(request.body, received) };
    }

    let listen: Listen | undefined;
    // Only a listen stream outlives its answer: other requests are answered whole, so nothing aborts them.
    let signal: AbortSignal | undefined;
    if (!Array.isArray(request.body) && received[0]?.method === 'subscriptions/listen' && context.caller) {
      const opened = listens.open(context.caller.keyId, request.headers.authorization);
      if (!opened.ok)
        return sendError(
          reply,
          opened.error,
          opened.error.retryAfter === undefined ? {} : { 'retry-after': String(opened.error.retryAfter) },
        );
      listen = opened.value;
      const gone = new AbortController();
      reply.raw.once('close', () => {
        gone.abort();
        listen?.close();
      });
      signal = AbortSignal.any([gone.signal, listen.signal]);
    }

    const response = await handler.fetch(webRequestOf(request, signal), {
      parsedBody: request.body,
      authInfo: authInfoOf(context),
    });
    return send(reply, response);
  }

  async function send(reply: FastifyReply, response: Response): Promise<FastifyReply> {
    reply.code(response.status);
    response.headers.forEach((value, name) => {
      // Ours stays: no response of /mcp may be stored by a cache on the way.
      if (name !== 'content-length' && name !== 'cache-control') reply.header(name, value);
    });
    if (response.body === null) return reply.send();
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      return reply.header('cache-control', 'private, no-store, no-transform').send(response.body);
    }
    return reply.send(await response.text());
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
        message: `method ${request.method} is not allowed on ${MCP_PATH}: this endpoint is stateless Streamable HTTP; send JSON-RPC messages with POST (subscriptions/listen for change notifications)`,
      });
    },
  });
};
