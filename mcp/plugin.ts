import { createMcpHandler, isInitializeRequest, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Budget, Protection } from '../service/guard.ts';
import { HEARTBEAT_MS } from '../service/changes.ts';
import type { Services } from '../service/services.ts';
import { credentialMemoOf } from '../transport/credential-memo.ts';
import { sendError } from '../transport/send-error.ts';
import { echoed } from '../service/errors.ts';
import { createOriginCheck } from './origin.ts';
import { createMcpServerFactory, WHOLE_SURFACE, type RequestContext, type Surface } from './server.ts';
import { createListenSlots, type Listen } from './subscriptions.ts';
import { tools as toolTable, type Tool } from './tools.ts';

export const MCP_PATH = '/mcp';

export type McpPluginOptions = {
  services: Services;
  tools?: readonly Tool[];
  /** Listen streams' heartbeat (15 s) and key re-check (5 s) intervals; tests shorten them. */
  listen?: { keepAliveMs?: number; recheckMs?: number };
};

/** The fields of one JSON-RPC message the budget looks at (the SDK validates the rest). */
export type RpcMessage = { method?: unknown; params?: { name?: unknown; arguments?: unknown; uri?: unknown } };

const messageOf = (body: unknown): RpcMessage | null =>
  typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as RpcMessage) : null;

/** An access-log and metrics label: the operation, and for /mcp its JSON-RPC method and tool. */
export type OperationLabel = {
  readonly operation: string;
  readonly rpc?: { readonly method: string; readonly tool?: string };
};

/** Methods labelled by name (metrics need a fixed set, never caller text); any other is `other`. */
const LABELLED_METHODS = [
  ...['initialize', 'server/discover', 'ping', 'tools/list', 'resources/list', 'resources/templates/list'],
  ...['resources/read', 'completion/complete', 'subscriptions/listen', 'prompts/list', 'other'],
  ...['notifications/initialized', 'notifications/cancelled'],
];

/** The label of an /mcp body, each made once: a label string joined per request cost a hash at every metrics look-up. */
export function rpcLabeller(toolNames: readonly string[]): (body: unknown) => OperationLabel {
  const label = (method: string, tool?: string): OperationLabel =>
    Object.freeze({
      operation: `mcp:${tool ?? method}`,
      rpc: Object.freeze(tool === undefined ? { method } : { method, tool }),
    });
  const byMethod = new Map(LABELLED_METHODS.map((method) => [method, label(method)]));
  const byTool = new Map([...toolNames, 'unknown_tool'].map((tool) => [tool, label('tools/call', tool)]));
  const batch = label('batch');
  const unreadable: OperationLabel = Object.freeze({ operation: 'mcp' });
  return (body) => {
    if (Array.isArray(body)) return batch;
    const message = messageOf(body);
    if (typeof message?.method !== 'string') return unreadable;
    if (message.method !== 'tools/call') return byMethod.get(message.method) ?? byMethod.get('other')!;
    const name = message.params?.name;
    return (typeof name === 'string' ? byTool.get(name) : undefined) ?? byTool.get('unknown_tool')!;
  };
}

/** Messages that read data: each counts against the requests budget shared with REST. */
const readsData = (m: RpcMessage | null): boolean => m?.method === 'tools/call' || m?.method === 'resources/read';

/**
 * The budget class of one message: a tools/call counts with its tool's class (computed from its
 * arguments as for the REST twin), a resources/read of a call record as get_calltracker_call;
 * anything else is basic.
 */
export function protectionOf(services: Services, tools: readonly Tool[], body: unknown): Protection {
  const message = messageOf(body);
  if (message?.method === 'resources/read')
    return String(message.params?.uri).startsWith('pulseboard://calls/') ? 'protected' : 'basic';
  if (message?.method !== 'tools/call') return 'basic';
  const tool = tools.find((t) => t.name === message.params?.name);
  const args = message.params?.arguments;
  if (!tool) return 'basic';
  const rest = tool.input.toRest(
    typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {},
  );
  return tool.protection(services, rest);
}

/** Messages the resource templates answer. */
const RESOURCE_METHODS = new Set([
  'resources/read',
  'resources/list',
  'resources/templates/list',
  'completion/complete',
]);

/**
 * What the server instance serving one message needs (a tool call its tool, a resource message the
 * resources): registering twelve tools for every call cost more than the call itself.
 */
export function surfaceOfBody(body: unknown): Surface {
  const message = messageOf(body);
  if (message?.method === 'tools/call')
    return { tools: typeof message.params?.name === 'string' ? [message.params.name] : [], resources: false };
  if (typeof message?.method === 'string' && RESOURCE_METHODS.has(message.method))
    return { tools: [], resources: true };
  return WHOLE_SURFACE;
}

/**
 * The SDK repeats some input whole in its errors (an unknown tool or resource, a header that disagrees
 * with the body, an unsupported version): those values reach it cut to the bound of every echo
 * (service/errors.ts `echoed`); a name, URI or header this server serves is unchanged.
 */
const ECHOED_HEADERS = new Set(['mcp-protocol-version', 'mcp-method', 'mcp-name']);
const cut = (value: unknown): unknown => (typeof value === 'string' ? echoed(value) : value);

/** The message with its method and its params' (and their ref's) names and URIs cut; a copy, the rest shared. */
function boundedMessage(node: unknown, keys = ['method', 'params']): unknown {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return node;
  const copy: Record<string, unknown> = { ...node };
  for (const key of keys) {
    if (!(key in copy)) continue;
    if (key === 'params' || key === 'ref') copy[key] = boundedMessage(copy[key], ['name', 'uri', 'ref']);
    else copy[key] = cut(copy[key]);
  }
  return copy;
}

/** Request headers the SDK reads (content negotiation, protocol version, the 2026-07-28 routing headers). */
const FORWARDED_HEADERS = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name'] as const;

/** The SDK takes a web Request; Fastify has read and parsed the body already, so it travels as parsedBody. */
function webRequestOf(request: FastifyRequest, signal: AbortSignal | undefined): Request {
  const headers = new Headers();
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, ECHOED_HEADERS.has(name) ? echoed(value) : value);
  }
  return new Request(`http://localhost${MCP_PATH}`, { method: 'POST', headers, ...(signal ? { signal } : {}) });
}

/** The SDK's refusals of the HTTP request itself, answered in the REST envelope like every HTTP-level refusal. */
const HTTP_REFUSALS: Record<number, string> = {
  406: 'send Accept: application/json, text/event-stream',
  415: 'request body must be application/json',
};

/** A JSON-RPC error answered before the SDK sees the message. */
function rpcError(reply: FastifyReply, status: number, to: unknown, code: number, message: string): FastifyReply {
  const id = (to as { id?: unknown } | null)?.id;
  const answerId = typeof id === 'string' || typeof id === 'number' ? id : null;
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', id: answerId, error: { code, message } });
}

/**
 * `/mcp`: the SDK's handler for both protocol eras on the REST app's Fastify instance. Ours, each for
 * a reason: Host/Origin (our allowlists), the key and the budget (the guard REST uses), one message
 * per POST (a budget unit is a message), echoed input cut short (the SDK repeats it whole), and the
 * REST envelope for every refusal of the HTTP request itself (docs/api-guide.md, "MCP errors").
 */
export const mcpPlugin: FastifyPluginAsync<McpPluginOptions> = async (app, options) => {
  const { services } = options;
  const tools = options.tools ?? toolTable;
  const originCheck = createOriginCheck(services.config);
  const contexts = new WeakMap<Request, RequestContext>();
  const handler = createMcpHandler(
    createMcpServerFactory(services, tools, (request) => (request ? contexts.get(request) : undefined)),
    { legacy: 'stateless', keepAliveMs: options.listen?.keepAliveMs ?? HEARTBEAT_MS },
  );
  const listens = createListenSlots(services, handler.notify, options.listen?.recheckMs);
  app.addHook('onClose', async () => {
    listens.close();
    await handler.close();
  });

  // JSON answers are compressed by @fastify/compress like REST's; event streams never are.
  app.post(MCP_PATH, async (request, reply) => {
    reply.header('cache-control', 'private, no-store');
    const foreign = originCheck({ host: request.headers.host, origin: request.headers.origin });
    if (foreign) return sendError(reply, foreign);

    const message = messageOf(request.body);
    const budget: Budget = readsData(message) ? 'requests' : 'protocol';
    const admitted = await services.guard.admit(
      request.headers.authorization,
      protectionOf(services, tools, request.body),
      budget,
      credentialMemoOf(request.raw.socket),
    );
    let context: RequestContext;
    if (!admitted.ok) {
      const { error, headers } = admitted.refused;
      // A refused data read is answered in the protocol (a tool error, a JSON-RPC error for a resource)
      // saying how long to wait; a key refused, or the protocol budget spent, is refused over HTTP as REST does.
      if (error.status === 401 || budget === 'protocol') return sendError(reply, error, headers);
      reply.headers(headers);
      if (error.retryAfter !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfter))));
      context = { refusal: error, log: request.log, surface: surfaceOfBody(request.body) };
    } else {
      reply.headers(admitted.value.headers);
      context = { caller: admitted.value.caller, log: request.log, surface: surfaceOfBody(request.body) };
    }
    // Batches left the protocol in 2025-06-18; a batch would also read many times on one budget unit.
    if (Array.isArray(request.body))
      return rpcError(reply, 400, null, -32600, 'Invalid Request: send one JSON-RPC message per POST (no batches)');
    // The SDK answers a malformed 2025 initialize as an internal error carrying its schema's dump.
    if (message?.method === 'initialize' && !claimsModern(message) && !isInitializeRequest(message))
      return rpcError(
        reply,
        200,
        message,
        -32602,
        'Invalid params: initialize takes protocolVersion, capabilities and clientInfo',
      );

    let listen: Listen | undefined;
    // Only a listen stream outlives its answer: other requests are answered whole, so nothing aborts them.
    let signal: AbortSignal | undefined;
    if (message?.method === 'subscriptions/listen' && context.caller) {
      const opened = listens.open(context.caller.keyId, request.headers.authorization);
      if (!opened.ok) return sendError(reply, opened.error);
      listen = opened.value;
      const gone = new AbortController();
      reply.raw.once('close', () => {
        gone.abort();
        listen?.close();
      });
      signal = AbortSignal.any([gone.signal, listen.signal]);
    }

    const webRequest = webRequestOf(request, signal);
    contexts.set(webRequest, context);
    const response = await handler.fetch(webRequest, { parsedBody: boundedMessage(request.body) });
    return send(reply, response);
  });

  async function send(reply: FastifyReply, response: Response): Promise<FastifyReply> {
    const refusal = HTTP_REFUSALS[response.status];
    if (refusal !== undefined)
      return sendError(reply, { status: response.status, code: 'bad_request', message: refusal });
    reply.code(response.status);
    response.headers.forEach((value, name) => {
      // Ours stays: no response of /mcp may be stored by a cache on the way.
      if (name !== 'content-length' && name !== 'cache-control') reply.header(name, value);
    });
    if (response.body === null) return reply.send();
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      return reply.header('cache-control', 'private, no-store, no-transform').send(response.body);
    }
    // A JSON answer is one message: read whole, @fastify/compress compresses it at once (a piped stream costs more).
    return reply.send(await response.text());
  }
};

/** A 2026-07-28 message (its version in `_meta`): the SDK answers its initialize as a removed method. */
const claimsModern = (message: RpcMessage): boolean => {
  const meta = (message.params as { _meta?: unknown } | undefined)?._meta;
  return typeof meta === 'object' && meta !== null && PROTOCOL_VERSION_META_KEY in meta;
};
