import type { ErrorCode } from '../readmodels/schemas.ts';

/** A refusal the transports render as `{error: {code, message}}` with this HTTP status. */
export type ServiceError = {
  status: number;
  /** One of the spec codes; thesis-feed operations may use any string (spec 2.11). */
  code: ErrorCode | (string & {});
  message: string;
  /** Seconds, sent as Retry-After. */
  retryAfter?: number;
};

export type Result<T> = { ok: true; value: T } | { ok: false; error: ServiceError };

/** What every HTTP surface answers for a refusal: one rule for REST and MCP alike. */
export type ErrorResponse = {
  status: number;
  headers: Record<string, string>;
  body: { error: { code: string; message: string } };
};

/**
 * A ServiceError as an HTTP answer: its status, the envelope, Retry-After in whole seconds (at least 1),
 * and on 401 the same Bearer challenge whatever the cause.
 */
export function errorResponse(error: ServiceError, headers: Record<string, string> = {}): ErrorResponse {
  const out: Record<string, string> = { ...headers };
  if (error.status === 401) out['www-authenticate'] = 'Bearer realm="pulseboard"';
  if (error.retryAfter !== undefined) out['retry-after'] = String(Math.max(1, Math.ceil(error.retryAfter)));
  return { status: error.status, headers: out, body: { error: { code: error.code, message: error.message } } };
}

/** Characters of caller input an error message repeats at most. */
export const ECHO_MAX = 100;

/**
 * Caller input as an error message repeats it: its first ECHO_MAX characters, then `…` when longer;
 * anything but printable ASCII, and `\` and `'`, written as a `\uXXXX` escape.
 */
export function echoed(input: string): string {
  const escaped = input
    .slice(0, ECHO_MAX)
    .replace(/[^\x20-\x7e]|[\\']/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return input.length > ECHO_MAX ? `${escaped}…` : escaped;
}

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T = never>(error: ServiceError): Result<T> => ({ ok: false, error });

export const errors = {
  badRequest: (message: string): ServiceError => ({ status: 400, code: 'bad_request', message }),
  unauthorized: (): ServiceError => ({ status: 401, code: 'unauthorized', message: 'Missing or invalid API key.' }),
  forbidden: (message: string): ServiceError => ({ status: 403, code: 'forbidden', message }),
  notFound: (message: string): ServiceError => ({ status: 404, code: 'not_found', message }),
  conflict: (message: string): ServiceError => ({ status: 409, code: 'conflict', message }),
  rateLimited: (
    retryAfter: number,
    message = 'Rate limit exceeded; retry after the Retry-After interval.',
  ): ServiceError => ({
    status: 429,
    code: 'rate_limited',
    message,
    retryAfter,
  }),
  unavailable: (message: string, retryAfter?: number): ServiceError => ({
    status: 503,
    code: 'unavailable',
    message,
    ...(retryAfter === undefined ? {} : { retryAfter }),
  }),
  rateProtectionDown: (): ServiceError => ({
    status: 503,
    code: 'unavailable',
    message: 'Rate protection is unavailable; wait 60 seconds and retry.',
    retryAfter: 60,
  }),
};
