import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  ResourceTemplate,
  type McpServer,
} from '@modelcontextprotocol/server';
import { BEATS } from '../config/beats.ts';
import type { Caller } from '../service/caller.ts';
import { errors, type Result, type ServiceError } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import { asValue } from '../service/json-body.ts';
import { envelopeOf, retryAfterSeconds, type ContextOf } from './request-context.ts';

/** Handles offered by completion at most (the spec's cap is 100; an agent needs a short list). */
const COMPLETION_MAX = 20;

export const projectUri = (id: string): string => `pulseboard://projects/${encodeURIComponent(id)}`;
const pulseUri = (beat: string): string => `pulseboard://pulse/${beat}`;

/** Refusals with no JSON-RPC code of their own (rate_limited, unavailable, forbidden, …): a server error. */
const SERVER_ERROR = -32000;

/** A refused read as a JSON-RPC error (no tool-error form here): a refused call's envelope and `retryAfterSeconds`, in `data`. */
function readFailure(uri: string, error: ServiceError): ProtocolError {
  const seconds = retryAfterSeconds(error);
  const envelope = envelopeOf(error);
  const data = { ...envelope, ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }) };
  if (error.code === 'not_found') return new ResourceNotFoundError(uri, error.message);
  const code = error.code === 'bad_request' ? ProtocolErrorCode.InvalidParams : SERVER_ERROR;
  return new ProtocolError(code, envelope.error.message, data);
}

type Read = (services: Services, caller: Caller, value: string) => Promise<Result<unknown>>;

/** The three templates (one variable each), what a model is told of them, and the twin tool's service call. */
const RESOURCES: { name: string; uri: string; title: string; description: string; read: Read }[] = [
  {
    name: 'project',
    uri: 'pulseboard://projects/{id}',
    title: 'One project',
    description:
      "A project by its stable id (or a handle), the same JSON as get_project. Subscribe to the id's URI for its writes.",
    read: async (services, caller, id) => asValue(await services.projects.get(caller, { handle: id }, {})),
  },
  {
    name: 'call',
    uri: 'pulseboard://calls/{id}',
    title: 'One call record',
    description:
      'A stored call record by its id (a uuid), with its thesis text: the same JSON, access and budget as get_calltracker_call.',
    read: (services, _caller, id) => services.calls.get({ id }, {}),
  },
  {
    name: 'pulse',
    uri: 'pulseboard://pulse/{beat}',
    title: 'Pulse card',
    description: 'The current card of one beat, the same JSON as get_pulse with beat.',
    read: (services, _caller, beat) => services.pulse.one({ beat }, {}),
  },
];

/** The eight beats listed, and completions for a beat and for a project handle by prefix. */
function templateOf(services: Services, name: string, uri: string): ResourceTemplate {
  if (name === 'call') return new ResourceTemplate(uri, { list: undefined });
  if (name === 'project')
    return new ResourceTemplate(uri, {
      list: undefined,
      complete: { id: async (prefix) => services.projects.handlesByPrefix(prefix, COMPLETION_MAX) },
    });
  const resources = BEATS.map((beat) => ({
    ...{ uri: pulseUri(beat.id), name: `pulse-${beat.id}`, title: `Pulse: ${beat.label}` },
    ...{ description: beat.blurb, mimeType: 'application/json' },
  }));
  const complete = { beat: (prefix: string) => BEATS.map((beat) => beat.id).filter((id) => id.startsWith(prefix)) };
  return new ResourceTemplate(uri, { list: () => ({ resources }), complete });
}

/** The resources: the twin tools' results as JSON text (same service calls, same access rules; counted like tool calls). */
export function registerResources(server: McpServer, services: Services, contextOf: ContextOf): void {
  for (const { name, uri, title, description, read } of RESOURCES) {
    const config = { title, description, mimeType: 'application/json' };
    server.registerResource(name, templateOf(services, name, uri), config, async (url, variables, ctx) => {
      const context = contextOf(ctx.http?.req);
      if (context?.refusal !== undefined || context === undefined)
        throw readFailure(url.href, context?.refusal ?? errors.unauthorized());
      const value = Object.values(variables)[0];
      const result = await read(services, context.caller, Array.isArray(value) ? (value[0] ?? '') : (value ?? ''));
      if (!result.ok) throw readFailure(url.href, result.error);
      return { contents: [{ uri: url.href, mimeType: 'application/json', text: JSON.stringify(result.value) }] };
    });
  }
}
