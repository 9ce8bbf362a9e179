import type { CallOptions, ClientError, Result } from './types.ts';

/**
 * One API call with the waits a careful consumer does: 429 and 503 are retried after the server's
 * Retry-After, a lost connection (or a proxy's 502/504) after a growing pause, all within one budget
 * of seconds per call, and cancellable. Failures are returned as values, never thrown.
 */
export type HttpOptions = {
  baseUrl: string;
  key: string;
  send: Send;
  maxWaitSeconds: number;
  /** Whether answers may come compressed (as fetch asks by default); false asks for them as they are. */
  compression: boolean;
  onWait?: (error: ClientError, seconds: number) => void;
};

/** What a call reads of an answer: a fetch Response is one. */
export type Answer = {
  status: number;
  ok: boolean;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
};

/** Sends one request: a fetch is one; rejects when no answer came (or the signal aborted it). */
export type Send = (
  url: string,
  init: { method: string; headers: Record<string, string>; signal: AbortSignal; body?: string },
) => Promise<Answer>;

export type HttpRequest = {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Seconds the server may hold the request (a long-poll) before its answer is overdue. */
  holdSeconds?: number;
};

/** Past this without an answer (plus any long-poll hold) a request counts as a lost connection and is retried. */
const ANSWER_TIMEOUT_MS = 60_000;
/** Pauses between retries of a lost connection: 0.5 s doubling up to 8 s. */
const NETWORK_PAUSE_MS = [500, 1000, 2000, 4000, 8000];
/** A 429/503 without Retry-After is retried after this long. */
const DEFAULT_RETRY_AFTER_S = 1;

const failure = (
  code: ClientError['code'],
  message: string,
  status: number | null,
  retryAfterSeconds: number | null = null,
) => ({
  ok: false as const,
  error: { code, message, status, retryAfterSeconds },
});

/** Retry-After as seconds (delta-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | null {
  if (header === null || header.trim() === '') return null;
  if (/^\s*\d+\s*$/.test(header)) return Number(header);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** Resolves after `ms`, or early (false) when the signal aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const done = (completed: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(completed);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Whether `baseUrl` names this machine (localhost, 127.0.0.0/8, ::1): no network between the two ends. */
export function isLoopback(baseUrl: string): boolean {
  if (!URL.canParse(baseUrl)) return false;
  const host = new URL(baseUrl).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function urlFor(baseUrl: string, path: string, query: HttpRequest['query'] = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  const search = params.toString();
  return `${baseUrl.replace(/\/+$/, '')}${path}${search ? `?${search}` : ''}`;
}

type Attempt<T> = { done: Result<T> } | { retry: ClientError; waitMs: number };

/** The target of a `Link` header's rel="next" (RFC 8288), resolved against the request's URL; null when none. */
export function nextLink(header: string | null, base: string): URL | null {
  if (header === null) return null;
  for (const link of header.split(',')) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(link);
    if (!match || !/(^|;)\s*rel\s*=\s*"?next"?\s*(;|$)/i.test(match[2]!)) continue;
    return URL.canParse(match[1]!, base) ? new URL(match[1]!, base) : null;
  }
  return null;
}

async function attempt<T>(
  options: HttpOptions,
  request: HttpRequest,
  callOptions: CallOptions,
  networkTries: number,
): Promise<Attempt<T>> {
  const { signal } = callOptions;
  let url: string;
  try {
    url = new URL(urlFor(options.baseUrl, request.path, request.query)).href;
    if (!/^https?:$/.test(new URL(url).protocol)) throw new Error('not http');
  } catch {
    return {
      done: failure(
        'invalid_url',
        `baseUrl is not an http(s) URL: ${JSON.stringify(options.baseUrl.slice(0, 100))}`,
        null,
      ),
    };
  }
  const timeout = AbortSignal.timeout(ANSWER_TIMEOUT_MS + (request.holdSeconds ?? 0) * 1000);
  const headers: Record<string, string> = { authorization: `Bearer ${options.key}`, accept: 'application/json' };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  if (!options.compression) headers['accept-encoding'] = 'identity';
  let response: Answer;
  let text: string;
  try {
    response = await options.send(url, {
      method: request.method,
      headers,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
    });
    if (response.ok && callOptions.onNext) {
      const next = nextLink(response.headers.get('link'), url);
      if (next) callOptions.onNext(next);
    }
    text = await response.text();
  } catch (error) {
    if (signal?.aborted) return { done: failure('aborted', 'the call was cancelled', null) };
    const cause =
      error instanceof Error && error.cause instanceof Error
        ? error.cause.message
        : error instanceof Error
          ? error.message
          : String(error);
    const lost = failure('network_error', `no answer from ${new URL(url).origin}: ${cause}`, null).error;
    return { retry: lost, waitMs: NETWORK_PAUSE_MS[Math.min(networkTries, NETWORK_PAUSE_MS.length - 1)]! };
  }
  const status = response.status;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (response.ok) {
    if (body === undefined)
      return {
        done: failure(
          'invalid_response',
          `HTTP ${status} without a JSON body: is ${options.baseUrl} a pulseboard API?`,
          status,
        ),
      };
    return { done: { ok: true, value: body as T, status } };
  }
  const after = retryAfterSeconds(response.headers.get('retry-after'));
  const envelope = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const error: ClientError =
    envelope && typeof envelope.code === 'string' && typeof envelope.message === 'string'
      ? { code: envelope.code, message: envelope.message, status, retryAfterSeconds: after }
      : {
          code: status === 502 || status === 504 ? 'network_error' : 'invalid_response',
          message: `HTTP ${status} without the API's error body`,
          status,
          retryAfterSeconds: after,
        };
  if (status === 429 || status === 503) return { retry: error, waitMs: (after ?? DEFAULT_RETRY_AFTER_S) * 1000 };
  if (status === 502 || status === 504)
    return { retry: error, waitMs: NETWORK_PAUSE_MS[Math.min(networkTries, NETWORK_PAUSE_MS.length - 1)]! };
  return { done: { ok: false, error } };
}

export async function call<T>(
  options: HttpOptions,
  request: HttpRequest,
  callOptions: CallOptions = {},
): Promise<Result<T>> {
  const { signal } = callOptions;
  const budgetMs = (callOptions.maxWaitSeconds ?? options.maxWaitSeconds) * 1000;
  let waitedMs = 0;
  let networkTries = 0;
  for (;;) {
    if (signal?.aborted) return failure('aborted', 'the call was cancelled', null);
    const result = await attempt<T>(options, request, callOptions, networkTries);
    if ('done' in result) return result.done;
    // A POST whose answer was lost may have been carried out: sending it again is the caller's choice.
    if (result.retry.code === 'network_error' && request.method === 'POST') return { ok: false, error: result.retry };
    if (result.retry.code === 'network_error') networkTries += 1;
    // A wait past the budget is not started: the caller gets the failure and the server's advice now.
    if (waitedMs + result.waitMs > budgetMs) return { ok: false, error: result.retry };
    options.onWait?.(result.retry, result.waitMs / 1000);
    if (!(await pause(result.waitMs, signal))) return failure('aborted', 'the call was cancelled', null);
    waitedMs += result.waitMs;
  }
}
