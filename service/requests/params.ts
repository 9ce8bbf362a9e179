import { z } from 'zod';
import { echoed } from '../errors.ts';

/**
 * How a parameter is advertised to typed clients (the MCP tool listing), where that differs from
 * what the schema accepts: a query-string spelling is accepted but not advertised, and a default
 * the service applies is stated. The listing replaces the generated JSON Schema of the entry.
 */
export const advertised = z.registry<Record<string, unknown>>();

/**
 * Parameter building blocks shared by REST (query strings) and MCP (typed JSON): each accepts the
 * typed value and its query-string spelling, so one schema serves both transports.
 * `fallback` is the value the service uses when the parameter is left out (advertised as `default`;
 * the schema itself leaves it unset, so a service can tell "not sent" from "sent").
 */
export const intParam = (min: number, max: number, fallback?: number) => {
  const message = `must be a whole number from ${min} to ${max}`;
  const schema = z
    .union(
      [
        z.number(),
        z
          .string()
          .regex(/^-?\d+$/, message)
          .transform(Number),
      ],
      { error: message },
    )
    .pipe(z.number().int(message).min(min, message).max(max, message));
  advertised.add(schema, {
    type: 'integer',
    minimum: min,
    maximum: max,
    ...(fallback === undefined ? {} : { default: fallback }),
  });
  return schema;
};

export const boolParam = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], {
  error: 'must be true or false',
});
advertised.add(boolParam, { type: 'boolean' });

export const dateTimeParam = z.iso.datetime({
  offset: true,
  message: 'must be an ISO 8601 date-time, e.g. 2026-11-20T08:00:00Z',
});

export type ParseResult<T> = { ok: true; value: T } | { ok: false; message: string };

/** Validates parameters; the message names the parameter and says what to change. */
export function parseParams<S extends z.ZodType>(schema: S, input: unknown): ParseResult<z.output<S>> {
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    // Names are caller input: at most five, each bounded and escaped.
    const named = issue.keys.slice(0, 5).map((k) => `'${echoed(k)}'`);
    return { ok: false, message: `unknown parameter ${named.join(', ')}${issue.keys.length > 5 ? ', …' : ''}` };
  }
  const name = issue.path.length > 0 ? echoed(issue.path.join('.')) : 'request';
  // A query parameter sent twice arrives as an array.
  if (issue.code === 'invalid_type' && / received array$/.test(issue.message))
    return { ok: false, message: `parameter '${name}' must be given once` };
  const detail =
    issue.code === 'invalid_union' && !issue.message.startsWith('must') ? 'has an invalid value' : issue.message;
  return { ok: false, message: `parameter '${name}' ${detail.startsWith('must') ? detail : `is invalid: ${detail}`}` };
}
