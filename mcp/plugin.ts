import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isInitializeRequest,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/server';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Budget, Protection } from '../service/guard.ts';
import { HEARTBEAT_MS } from '../service/changes.ts';
import type { Services } from '../service/services.ts';
import { credentialMemoOf } from '../transport/credential-memo.ts';
import { sendError } from '../transport/send-error.ts';
import { echoed } from '../service/errors.ts';
import { createOriginCheck } from './origin.ts';
import { retryAfterSeconds, type RequestContext } from './request-context.ts';
import { createServing } from './server.ts';
import { createListenSlots } from './subscriptions.ts';
import { tools as toolTable, type Tool } from './tools.ts';

export const MCP_PATH = '/mcp';

/** `listen`: the listen streams' heartbeat (15 s) and key re-check (5 s) intervals; tests shorten them. */
export type McpPluginOptions = {
  services: Services;
  tools?: readonly Tool[];
  listen?: { keepAliveMs?: number; recheckMs?: number };
};

/** The fields of one JSON-RPC message the budget looks at (the SDK validates the rest). */
type RpcMessage = { id?: unknown; method?: unknown; params?: Record<'name' | 'arguments' | 'uri' | '_meta', unknown> };

const messageOf = (body: unknown): RpcMessage | null =>
  typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as RpcMessage) : null;

/** An access-log and metrics label: the operation, and for /mcp its JSON-RPC method and tool. */
export type OperationLabel = { readonly operation: string; readonly rpc?: { method: string; tool?: string } };

/** Methods labelled by name (metrics need a fixed set, never caller text); any other is `other`. */
const LABELLED_METHODS = [
  ...['initialize', 'server/discover', 'ping', 'tools/list', 'resources/list', 'resources/templates/list'],
  ...['resources/read', 'completion/complete', 'subscriptions/listen', 'prompts/list', 'other'],
  ...['notifications/initialized', 'notifications/cancelled'],
];

/** The label of an /mcp body, each made once: a label string joined per request cost a hash at every metrics look-up. */
export function rpcLabeller(toolNames: readonly string[]): (body: unknown) => OperationLabel {
  const label = (method: string, tool?: string): OperationLabel =>
    Object.freeze({ operation: `mcp:${tool ?? method}`, rpc: Object.freeze(tool ? { method, tool } : { method }) });
  const byMethod = new Map(LABELLED_METHODS.map((method) => [method, label(method)]));
  const byTool = new Map([...toolNames, 'unknown_tool'].map((tool) => [tool, label('tools/call', tool)]));
  const [batch, unreadable] = [label('batch'), Object.freeze({ operation: 'mcp' })];
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

/** A message's budget class: a tool call its tool's (from its arguments, as the REST twin), a call record read as get_calltracker_call. */
export function protectionOf(services: Services, tools: readonly Tool[], body: unknown): Protection {
  const message = messageOf(body);
  if (message?.method === 'resources/read')
    return String(message.params?.uri).startsWith('pulseboard://calls/') ? 'protected' : 'basic';
  const tool = message?.method === 'tools/call' ? tools.find((t) => t.name === message.params?.name) : undefined;
  const { protection = 'protected' } = tool ?? { protection: 'basic' };
  if (typeof protection === 'string') return protection;
  const args = (messageOf(message?.params?.arguments) ?? {}) as Record<string, unknown>;
  return protection(services, tool!.input.toRest(args));
}

/** The SDK repeats some input whole in its errors (an unknown tool, a header that disagrees, a version): it gets them cut (service/errors.ts `echoed`). */
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

/** A JSON-RPC error answered before the SDK sees the message (a batch, a malformed 2025 initialize). */
function rpcError(reply: FastifyReply, status: number, to: unknown, code: number, message: string): FastifyReply {
  const id = messageOf(to)?.id;
  const answerId = typeof id === 'string' || typeof id === 'number' ? id : null;
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', id: answerId, error: { code, message } });
}

/** The SDK's answer sent by Fastify: ours stays of its headers cache-control (nothing on the way may store an answer). */
async function send(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  const refusal = HTTP_REFUSALS[response.status];
  if (refusal !== undefined)
    return sendError(reply, { status: response.status, code: 'bad_request', message: refusal });
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'cache-control') reply.header(name, value);
  });
  if (response.body === null) return reply.send();
  if (response.headers.get('content-type')?.startsWith('text/event-stream'))
    return reply.header('cache-control', 'private, no-store, no-transform').send(response.body);
  // A JSON answer is one message: read whole, @fastify/compress compresses it at once (a piped stream costs more).
  return reply.send(await response.text());
}

/**
 * `/mcp`: the SDK serving both protocol eras on the REST app's Fastify instance. Ours, each for a
 * reason: Host/Origin (our allowlists), the key and the budget (the guard REST uses), one message
 * per POST (a budget unit is a message), echoed input cut short (the SDK repeats it whole), and the
 * REST envelope for every refusal of the HTTP request itself (docs/api-guide.md, "MCP errors").
 */
export const mcpPlugin: FastifyPluginAsync<McpPluginOptions> = async (app, options) => {
  const { services } = options;
  const tools = options.tools ?? toolTable;
  const originCheck = createOriginCheck(services.config);
  const contexts = new WeakMap<Request, RequestContext>();
  const contextOf = (request: Request | undefined) => (request ? contexts.get(request) : undefined);
  const serving = createServing(services, tools, contextOf, options.listen?.keepAliveMs ?? HEARTBEAT_MS);
  const listens = createListenSlots(services, serving.notify, options.listen?.recheckMs);
  app.addHook('onClose', async () => {
    listens.close();
    await serving.close();
  });

  // JSON answers are compressed by @fastify/compress like REST's; event streams never are.
  app.post(MCP_PATH, async (request, reply) => {
    reply.header('cache-control', 'private, no-store');
    const foreign = originCheck({ host: request.headers.host, origin: request.headers.origin });
    if (foreign) return sendError(reply, foreign);

    const message = messageOf(request.body);
    const budget: Budget = readsData(message) ? 'requests' : 'protocol';
    const protection = protectionOf(services, tools, request.body);
    const memo = credentialMemoOf(request.raw.socket);
    const admitted = await services.guard.admit(request.headers.authorization, protection, budget, memo);
    if (!admitted.ok) {
      const { error, headers } = admitted.refused;
      // A refused data read is answered in the protocol (a tool error, a JSON-RPC error for a resource)
      // saying how long to wait; a key refused, or the protocol budget spent, is refused over HTTP as REST does.
      if (error.status === 401 || budget === 'protocol') return sendError(reply, error, headers);
      reply.headers(headers);
      if (error.retryAfter !== undefined) reply.header('retry-after', String(retryAfterSeconds(error)));
    } else reply.headers(admitted.value.headers);
    // Batches left the protocol in 2025-06-18; a batch would also read many times on one budget unit.
    if (Array.isArray(request.body))
      return rpcError(reply, 400, null, -32600, 'Invalid Request: send one JSON-RPC message per POST (no batches)');
    const meta = (messageOf(message?.params?._meta) ?? {}) as Record<string, unknown>;
    const declaresIdentity =
      meta[CLIENT_INFO_META_KEY] !== undefined && meta[CLIENT_CAPABILITIES_META_KEY] !== undefined;
    const who = admitted.ok ? { caller: admitted.value.caller } : { refusal: admitted.refused.error };
    const context: RequestContext = { ...who, log: request.log, declaresIdentity };
    // The SDK answers a malformed 2025 initialize as an internal error carrying its schema's dump (a 2026-07-28 one, in `_meta`, as a removed method).
    const modern = PROTOCOL_VERSION_META_KEY in meta;
    const invalid = 'Invalid params: initialize takes protocolVersion, capabilities and clientInfo';
    if (message?.method === 'initialize' && !modern && !isInitializeRequest(message))
      return rpcError(reply, 200, message, -32602, invalid);

    // Only a listen stream outlives its answer (nothing aborts the others); its web Request is kept while it
    // is open, as a Request passes our abort on through a weak link (a collected one never would).
    let signal: AbortSignal | undefined;
    if (message?.method === 'subscriptions/listen' && context.caller) {
      const opened = listens.open(context.caller.keyId, request.headers.authorization);
      if (!opened.ok) return sendError(reply, opened.error);
      const [listen, gone] = [opened.value, new AbortController()];
      reply.raw.once('close', () => (gone.abort(), listen.close()));
      signal = AbortSignal.any([gone.signal, listen.signal]);
    }
    const webRequest = webRequestOf(request, signal);
    contexts.set(webRequest, context);
    if (signal) reply.raw.once('close', () => contexts.delete(webRequest));
    // A claim outside initialize is 2026-07-28's or refused: the SDK's classification is asked only otherwise.
    const claimed = modern && message?.method !== 'initialize';
    return send(reply, await serving.fetch(webRequest, boundedMessage(request.body), claimed));
  });
};
