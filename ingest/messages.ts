import { z } from 'zod';
import { BEATS, isBeatId } from '../config/beats.ts';
import { sourcePayloads, sourceTypes, type SourcePayload, type SourceType } from '../events/source.ts';
import { isoDateTime } from '../readmodels/schemas.ts';

/**
 * Source message contract (docs/source-messages.md): an envelope `{type, id, at, data}` whose `data` is the
 * type's payload from events/source.ts, plus the rules that depend on configuration.
 */

export const MESSAGE_ID_MAX = 200;

const TYPE_VALUE_QUOTE_MAX = 60;

function describeType(input: unknown): string {
  if (typeof input !== 'string') return 'must be a string';
  const shown = input.length > TYPE_VALUE_QUOTE_MAX ? `${input.slice(0, TYPE_VALUE_QUOTE_MAX)}…` : input;
  return `unknown message type ${JSON.stringify(shown)}`;
}

export const envelopeSchema = z
  .object({
    type: z.enum(sourceTypes as [SourceType, ...SourceType[]], {
      error: (issue) => `${describeType(issue.input)}; expected one of ${sourceTypes.join(', ')}`,
    }),
    id: z.string().min(1).max(MESSAGE_ID_MAX),
    at: isoDateTime,
    // Checked against the type's payload schema once the type is known.
    data: z.unknown(),
  })
  .strict();

export type SourceMessage = {
  [T in SourceType]: { type: T; id: string; at: string; data: SourcePayload<T> };
}[SourceType];

export type MessageRules = {
  /** `followers.observed.source` must equal this (config `PULSEBOARD_FOLLOWER_PROVIDER`). */
  followerProvider: string;
};

export type Rejection = { path: string; reason: string };
export type ParseResult = { ok: true; message: SourceMessage } | ({ ok: false } & Rejection);

/** Path of a problem that concerns the message as a whole rather than one field. */
export const WHOLE_MESSAGE = '(message)';

function pathText(path: readonly PropertyKey[]): string {
  return path.length === 0 ? WHOLE_MESSAGE : path.map((p) => String(p)).join('.');
}

/**
 * Reasons are built from zod's issue metadata, which describes what was expected and never
 * echoes the input, so a rejected call's thesis text cannot leak into a reason.
 */
function issueToRejection(issue: z.core.$ZodIssue, input: unknown, prefix: readonly PropertyKey[]): Rejection {
  const path = pathText([...prefix, ...issue.path]);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const more = issue.keys.length > 1 ? ` (and ${issue.keys.length - 1} more unknown fields)` : '';
    return { path: pathText([...prefix, ...issue.path, key]), reason: `unknown field${more}` };
  }
  if (isAbsent(input, issue.path)) {
    const expected = issue.code === 'invalid_type' ? `expected ${issue.expected}` : issue.message;
    return { path, reason: `required field is missing (${expected})` };
  }
  return { path, reason: issue.message };
}

/** True when the last key of `path` is not present on its (object) parent in `input`. */
function isAbsent(input: unknown, path: readonly PropertyKey[]): boolean {
  if (path.length === 0) return false;
  let parent = input;
  for (const key of path.slice(0, -1)) {
    if (typeof parent !== 'object' || parent === null) return false;
    parent = (parent as Record<PropertyKey, unknown>)[key];
  }
  return (
    typeof parent === 'object' &&
    parent !== null &&
    !Array.isArray(parent) &&
    !Object.hasOwn(parent, path[path.length - 1]!)
  );
}

/** At most this many problems of one message are named; the rest are counted. */
const NAMED_ISSUES_MAX = 10;

/** Every problem zod found, each with its path: a line with two bad fields names both. */
function issuesOf(error: z.ZodError, input: unknown, prefix: readonly PropertyKey[]): Rejection[] {
  if (error.issues.length === 0) return [{ path: pathText(prefix), reason: 'invalid' }];
  return error.issues.map((issue) => issueToRejection(issue, input, prefix));
}

/** One rejection: a single problem as it is; several as their paths, and each path with its reason. */
function combined(rejections: Rejection[]): Rejection {
  if (rejections.length === 1) return rejections[0]!;
  const named = rejections.slice(0, NAMED_ISSUES_MAX);
  const rest = rejections.length - named.length;
  return {
    path: named.map((r) => r.path).join(', '),
    reason:
      named.map((r) => `${r.path}: ${r.reason}`).join('; ') +
      (rest > 0 ? `; and ${rest} more problem${rest > 1 ? 's' : ''}` : ''),
  };
}

/** An empty handle would be stored as '' and could never be looked up; null says "no handle". */
function handleRule(data: { handle?: string | null }): Rejection | null {
  if (typeof data.handle === 'string' && data.handle.replace(/^@+/, '').length === 0) {
    return { path: 'data.handle', reason: 'must not be empty (send null for a project without a handle)' };
  }
  return null;
}

function configuredRules(message: SourceMessage, rules: MessageRules): Rejection | null {
  switch (message.type) {
    case 'followers.observed':
      if (message.data.source !== rules.followerProvider) {
        return {
          path: 'data.source',
          reason: `must be the configured follower provider ${JSON.stringify(rules.followerProvider)}`,
        };
      }
      return handleRule(message.data);
    case 'project.sighted':
      return handleRule(message.data);
    case 'pulse.published':
      if (!isBeatId(message.data.card.beat)) {
        return {
          path: 'data.card.beat',
          reason: `must be a configured beat id (${BEATS.map((b) => b.id).join(', ')})`,
        };
      }
      return null;
    default:
      return null;
  }
}

/** Validates an already JSON-decoded message: envelope, then the type's payload, then configured rules. */
export function parseMessage(value: unknown, rules: MessageRules): ParseResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, path: WHOLE_MESSAGE, reason: 'must be a JSON object {type, id, at, data}' };
  }
  const envelope = envelopeSchema.safeParse(value);
  if (!envelope.success) {
    const problems = issuesOf(envelope.error, value, []);
    // With a known type the payload is checked too, so that every bad field is named at once.
    const type = (value as { type?: unknown }).type;
    const payloadSchema =
      typeof type === 'string' && Object.hasOwn(sourcePayloads, type)
        ? (sourcePayloads[type as SourceType] as z.ZodType)
        : null;
    if (payloadSchema && Object.hasOwn(value, 'data')) {
      const data = (value as { data: unknown }).data;
      const payload = payloadSchema.safeParse(data);
      if (!payload.success) problems.push(...issuesOf(payload.error, data, ['data']));
    }
    return { ok: false, ...combined(problems) };
  }
  if (!Object.hasOwn(value, 'data'))
    return { ok: false, path: 'data', reason: 'required field is missing (expected object)' };
  const { type, id, at, data } = envelope.data;
  const payloadSchema = sourcePayloads[type] as z.ZodType;
  const payload = payloadSchema.safeParse(data);
  if (!payload.success) return { ok: false, ...combined(issuesOf(payload.error, data, ['data'])) };
  const message = { type, id, at, data: payload.data } as SourceMessage;
  const broken = configuredRules(message, rules);
  if (broken) return { ok: false, ...broken };
  return { ok: true, message };
}

export type DecodeResult = { ok: true; value: unknown } | ({ ok: false } & Rejection);

/**
 * JSON.parse's own messages quote a slice of the input (which may be thesis text), so only the
 * position is kept.
 */
export function decodeJson(raw: string): DecodeResult {
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch (error) {
    const text = error instanceof Error ? error.message : '';
    const position = /at position (\d+)/.exec(text)?.[1];
    const where =
      position !== undefined
        ? ` (at character ${Number(position) + 1})`
        : /end of JSON/.test(text)
          ? ' (ends too early)'
          : '';
    return { ok: false, path: WHOLE_MESSAGE, reason: `not valid JSON${where}` };
  }
}

/** Decodes and validates one JSON text (an NDJSON line or a Kafka message value). */
export function parseRawMessage(raw: string, rules: MessageRules): ParseResult {
  const decoded = decodeJson(raw);
  if (!decoded.ok) return decoded;
  return parseMessage(decoded.value, rules);
}
