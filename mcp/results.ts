import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ServiceError } from '../service/errors.ts';

/** A successful tool result: the REST body as structured content and, byte for byte, as text. */
export function toolSuccess(body: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

/**
 * `JSON.stringify(toolSuccess(body))`, serializing the body once: structuredContent's JSON is the
 * very text the text block carries, so it is spliced in rather than produced a second time.
 */
export function serializedToolSuccess(body: Record<string, unknown>): string {
  return serializedToolSuccessText(JSON.stringify(body));
}

/** `serializedToolSuccess` of the body whose JSON text is `text` (made by the service). */
export function serializedToolSuccessText(text: string): string {
  return `{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}`;
}

/**
 * A failed tool result carrying the spec's `{error: {code, message}}` in both blocks. A tool
 * caller never sees HTTP headers, so a wait the REST surface states in Retry-After is spelled
 * out in the message, and given to programs as `_meta.retryAfterSeconds`.
 */
export function toolFailure(error: ServiceError): CallToolResult {
  let message = error.message;
  let seconds: number | undefined;
  if (error.retryAfter !== undefined) {
    seconds = Math.max(1, Math.ceil(error.retryAfter));
    if (!message.includes(`${seconds} seconds`)) message = `${message} Wait ${seconds} seconds before calling again.`;
  }
  const body = { error: { code: error.code, message } };
  return {
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body,
    isError: true,
    ...(seconds === undefined ? {} : { _meta: { retryAfterSeconds: seconds } }),
  };
}
