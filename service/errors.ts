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

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T = never>(error: ServiceError): Result<T> => ({ ok: false, error });

export const errors = {
  badRequest: (message: string): ServiceError => ({ status: 400, code: 'bad_request', message }),
  unauthorized: (): ServiceError => ({ status: 401, code: 'unauthorized', message: 'Missing or invalid API key.' }),
  forbidden: (message: string): ServiceError => ({ status: 403, code: 'forbidden', message }),
  notFound: (message: string): ServiceError => ({ status: 404, code: 'not_found', message }),
  conflict: (message: string): ServiceError => ({ status: 409, code: 'conflict', message }),
  rateLimited: (retryAfter: number, message = 'Rate limit exceeded; retry after the Retry-After interval.'): ServiceError => ({
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
