import type { z } from 'zod';
import type { Caller } from '../service/caller.ts';
import { ok, type Result } from '../service/errors.ts';
import type { JsonBody } from '../service/json-body.ts';
import type { OpenStream } from '../service/changes.ts';
import type { Protection } from '../service/guard.ts';

export type OperationInput = {
  caller: Caller;
  params: unknown;
  query: unknown;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  /** Aborts when the client has gone away (long-polls and streams stop waiting for it). */
  signal: AbortSignal;
  /** The Authorization value the request was admitted with: a held request (long-poll, stream) checks it again. */
  authorization: string | undefined;
};

/**
 * A successful reply: the body as a value, or as the JSON bytes the service made (see
 * service/json-body.ts), or a change stream; and, when not 200, its status.
 */
export type OperationReply = { status?: number; headers?: Record<string, string> } & (
  { body: unknown } | { json: JsonBody<unknown> } | { stream: OpenStream }
);

/**
 * One REST operation: what the OpenAPI document describes and what the route runs.
 * `run` only calls a service; it holds no business rule.
 */
export type RestOperation = {
  operationId: string;
  method: 'GET' | 'POST';
  /** Fastify path, e.g. `/v1/projects/:handle`. */
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  protection: (query: unknown) => Protection;
  request: { params?: z.ZodType; query?: z.ZodType; body?: z.ZodType };
  /** Success responses by status code. */
  responses: Record<number, { description: string; schema: z.ZodType }>;
  /** Error statuses this operation can answer, with a description each. */
  errors: Record<number, string>;
  /** The error body schema when it is not the standard envelope (thesis feed: any code string). */
  errorSchema?: z.ZodType;
  /** The success body's media type when it is not JSON: `text/event-stream` (its schema describes one event's data). */
  produces?: 'text/event-stream';
  /** `no-store`: a successful read is never kept (call records, thesis feed); unset: revalidated by ETag. */
  cache?: 'no-store';
  /** Extra response headers on every reply of this operation. */
  headers?: Record<string, string>;
  /** A 200 with a page after it carries `Link: <path?query>; rel="next"` (RFC 8288), readable before the body. */
  linksNext?: true;
  run(input: OperationInput): Promise<Result<OperationReply>>;
};

/** A service result as a 200 reply. */
export async function replyWith<T>(result: Promise<Result<T>>): Promise<Result<OperationReply>> {
  const r = await result;
  return r.ok ? ok({ body: r.value }) : r;
}

/** A service result made as JSON bytes as a 200 reply. */
export async function replyWithJson<T>(result: Promise<Result<JsonBody<T>>>): Promise<Result<OperationReply>> {
  const r = await result;
  return r.ok ? ok({ json: r.value }) : r;
}
