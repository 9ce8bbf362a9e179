import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ServiceError } from '../service/errors.ts';

/** A successful tool result: the REST body as structured content and, byte for byte, as text. */
export function toolSuccess(body: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

/** The whole seconds to wait that a refusal states, at least 1; undefined when waiting does not help. */
export const retryAfterSeconds = (error: ServiceError): number | undefined =>
  error.retryAfter === undefined ? undefined : Math.max(1, Math.ceil(error.retryAfter));

/** The envelope of a refusal; a wait is spelled out in the message, as no header reaches the agent. */
export function envelopeOf(error: ServiceError): { error: { code: string; message: string } } {
  const seconds = retryAfterSeconds(error);
  const wait = seconds !== undefined && !error.message.includes(`${seconds} seconds`);
  return {
    error: {
      code: error.code,
      message: wait ? `${error.message} Wait ${seconds} seconds before calling again.` : error.message,
    },
  };
}

/**
 * A failed tool result carrying the spec's `{error: {code, message}}` in both blocks. A tool
 * caller never sees HTTP headers, so a wait the REST surface states in Retry-After is spelled
 * out in the message, and given to programs as `_meta.retryAfterSeconds`.
 */
export function toolFailure(error: ServiceError): CallToolResult {
  const body = envelopeOf(error);
  const seconds = retryAfterSeconds(error);
  return {
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body,
    isError: true,
    ...(seconds === undefined ? {} : { _meta: { retryAfterSeconds: seconds } }),
  };
}
