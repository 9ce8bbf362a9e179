import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  ResourceTemplate,
  type McpServer,
  type ReadResourceResult,
} from '@modelcontextprotocol/server';
import { BEATS } from '../config/beats.ts';
import type { Caller } from '../service/caller.ts';
import { errors, type Result, type ServiceError } from '../service/errors.ts';
import type { Services } from '../service/services.ts';
import { asValue } from '../service/json-body.ts';
import { envelopeOf, retryAfterSeconds, type RequestContext } from './request-context.ts';

/** Handles offered by completion at most (the spec's cap is 100; an agent needs a short list). */
export const COMPLETION_MAX = 20;

export const PROJECT_TEMPLATE = 'pulseboard://projects/{id}';
export const CALL_TEMPLATE = 'pulseboard://calls/{id}';
export const PULSE_TEMPLATE = 'pulseboard://pulse/{beat}';

export const projectUri = (id: string): string => `pulseboard://projects/${encodeURIComponent(id)}`;
export const pulseUri = (beat: string): string => `pulseboard://pulse/${beat}`;

/** Refusals with no JSON-RPC code of their own (rate_limited, unavailable, forbidden, …): a server error. */
export const SERVER_ERROR = -32000;

/**
 * A refused read as a JSON-RPC error (resources/read has no tool-error form), answered as a refused
 * tool call is: the same envelope and, when waiting helps, `retryAfterSeconds`, here in `data`.
 */
function readFailure(uri: string, error: ServiceError): ProtocolError {
  const seconds = retryAfterSeconds(error);
  const envelope = envelopeOf(error);
  const data = { ...envelope, ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }) };
  if (error.code === 'not_found') return new ResourceNotFoundError(uri, error.message);
  const code = error.code === 'bad_request' ? ProtocolErrorCode.InvalidParams : SERVER_ERROR;
  return new ProtocolError(code, envelope.error.message, data);
}

const single = (value: string | string[] | undefined): string =>
  Array.isArray(value) ? (value[0] ?? '') : (value ?? '');

/** The three resource templates, made once: their URI patterns and completions hold no caller. */
export type ResourceTemplates = { project: ResourceTemplate; call: ResourceTemplate; pulse: ResourceTemplate };

export function resourceTemplates(services: Services): ResourceTemplates {
  return {
    project: new ResourceTemplate(PROJECT_TEMPLATE, {
      list: undefined,
      complete: { id: async (prefix) => services.projects.handlesByPrefix(prefix, COMPLETION_MAX) },
    }),
    call: new ResourceTemplate(CALL_TEMPLATE, { list: undefined }),
    pulse: new ResourceTemplate(PULSE_TEMPLATE, {
      list: () => ({
        resources: BEATS.map((beat) => ({
          uri: pulseUri(beat.id),
          name: `pulse-${beat.id}`,
          title: `Pulse: ${beat.label}`,
          description: beat.blurb,
          mimeType: 'application/json',
        })),
      }),
      complete: { beat: (prefix) => BEATS.map((beat) => beat.id).filter((id) => id.startsWith(prefix)) },
    }),
  };
}

/**
 * Resource templates whose contents are the twin tools' results as JSON text (the same service
 * calls, so the same access rules), a listing of the eight pulse beats, and completions for a beat
 * and for a project handle by prefix. Reads are admitted and counted by the plugin like tool calls.
 */
export function registerResources(
  server: McpServer,
  services: Services,
  templates: ResourceTemplates,
  context: RequestContext | undefined,
): void {
  async function read(uri: URL, call: (caller: Caller) => Promise<Result<unknown>>): Promise<ReadResourceResult> {
    if (context === undefined) throw readFailure(uri.href, errors.unauthorized());
    if (context.refusal !== undefined) throw readFailure(uri.href, context.refusal);
    const result = await call(context.caller);
    if (!result.ok) throw readFailure(uri.href, result.error);
    return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(result.value) }] };
  }

  const described = (title: string, description: string) => ({ title, description, mimeType: 'application/json' });
  server.registerResource(
    'project',
    templates.project,
    described(
      'One project',
      "A project by its stable id (or a handle), the same JSON as get_project. Subscribe to the id's URI for its writes.",
    ),
    (uri, { id }) =>
      read(uri, async (caller) => asValue(await services.projects.get(caller, { handle: single(id) }, {}))),
  );
  server.registerResource(
    'call',
    templates.call,
    described(
      'One call record',
      'A stored call record by its id (a uuid), with its thesis text: the same JSON, access and budget as get_calltracker_call.',
    ),
    (uri, { id }) => read(uri, () => services.calls.get({ id: single(id) }, {})),
  );
  server.registerResource(
    'pulse',
    templates.pulse,
    described('Pulse card', 'The current card of one beat, the same JSON as get_pulse with beat.'),
    (uri, { beat }) => read(uri, () => services.pulse.one({ beat: single(beat) }, {})),
  );
}
