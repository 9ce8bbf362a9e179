import type { z } from 'zod';
import { andThen, type Awaitable } from '../readmodels/awaitable.ts';
import type { Caller } from '../service/caller.ts';
import { ok, type Result } from '../service/errors.ts';
import type { BodyParts, Rendered } from '../service/spliced.ts';
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
};

/**
 * A successful reply: the JSON body (a value, or its JSON text made by the service with stored
 * documents spliced in) and, when not 200, its status.
 */
export type OperationReply = { status?: number; headers?: Record<string, string> } & (
  | { body: unknown }
  | { json: string }
  /** The body as bytes around its `readAt`, with its validator already made (see service/spliced.ts). */
  | { parts: BodyParts; readAt: string }
  | { stream: OpenStream }
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
  run(input: OperationInput): Awaitable<Result<OperationReply>>;
};

/** A service result as a 200 reply. */
export async function replyWith<T>(result: Promise<Result<T>>): Promise<Result<OperationReply>> {
  const r = await result;
  return r.ok ? ok({ body: r.value }) : r;
}

/** A rendered service result as a 200 reply: its bytes around `readAt` (or its JSON text when it cannot be split so). */
export function replyWithJson<T>(result: Awaitable<Result<Rendered<T>>>): Awaitable<Result<OperationReply>> {
  return andThen(result, jsonReply);
}

function jsonReply<T>(r: Result<Rendered<T>>): Result<OperationReply> {
  if (!r.ok) return r;
  const split = r.value.parts();
  return ok(split ? split : { json: r.value.json() });
}
