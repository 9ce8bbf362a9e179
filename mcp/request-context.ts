import type { Caller } from '../service/caller.ts';
import type { ServiceError } from '../service/errors.ts';

/** Who sent this request, or why the rate gate refused it (every tool call then answers that error); the log reports a tool's throw by name only. */
export type RequestContext = (
  { caller: Caller; refusal?: undefined } | { refusal: ServiceError; caller?: undefined }
) & {
  log?: { error(fields: { err: { type: string } }, message: string): void };
  /** A 2026-07-28 envelope naming both clientInfo and clientCapabilities: the SDK overwrites a reused instance's. */
  declaresIdentity?: boolean;
};

/** The context of the request a handler serves, found by the web Request the SDK hands it. */
export type ContextOf = (request: Request | undefined) => RequestContext | undefined;

/** The whole seconds to wait that a refusal states, at least 1; undefined when waiting does not help. */
export const retryAfterSeconds = (error: ServiceError): number | undefined =>
  error.retryAfter === undefined ? undefined : Math.max(1, Math.ceil(error.retryAfter));

/** The envelope of a refusal; a wait is spelled out in the message, as no header reaches an agent. */
export function envelopeOf(error: ServiceError): { error: { code: string; message: string } } {
  const seconds = retryAfterSeconds(error);
  const wait = seconds !== undefined && !error.message.includes(`${seconds} seconds`);
  const message = wait ? `${error.message} Wait ${seconds} seconds before calling again.` : error.message;
  return { error: { code: error.code, message } };
}
