import type { z } from 'zod';
import { isoDateTime } from '../readmodels/schemas.ts';
import { accessPayloads } from './access.ts';
import { researchPayloads } from './research.ts';
import { sourcePayloads, type SourcePayload, type SourceType } from './source.ts';
import { thesisPayloads } from './thesis.ts';

/**
 * Every event type the service stores, with the zod schema of its `data`.
 * Source events carry the message payload plus `at`; command events carry their own time fields.
 */
type SourceEventSchema<T extends SourceType> = z.ZodType<SourcePayload<T> & { at: string }>;

const sourceEventSchemas = Object.fromEntries(
  Object.entries(sourcePayloads).map(([type, payload]) => [type, payload.safeExtend({ at: isoDateTime })]),
) as unknown as { [T in SourceType]: SourceEventSchema<T> };

export const eventSchemas = {
  ...sourceEventSchemas,
  ...accessPayloads,
  ...researchPayloads,
  ...thesisPayloads,
};

export type EventType = keyof typeof eventSchemas;
export type EventData<T extends EventType> = z.infer<(typeof eventSchemas)[T]>;

export function isKnownEventType(type: string): type is EventType {
  return Object.hasOwn(eventSchemas, type);
}

export type EventDataResult<T extends EventType> = { ok: true; data: EventData<T> } | { ok: false; reason: string };

export function parseEventData<T extends EventType>(type: T, data: unknown): EventDataResult<T> {
  const parsed = (eventSchemas[type] as unknown as z.ZodType<EventData<T>>).safeParse(data);
  if (parsed.success) return { ok: true, data: parsed.data };
  return {
    ok: false,
    reason: parsed.error.issues.map((i) => `${i.path.join('.') || '(data)'}: ${i.message}`).join('; '),
  };
}

/** Narrow a recorded event to its typed data; projectors call this after dispatching on `type`. */
export function dataOf<T extends EventType>(_type: T, data: unknown): EventData<T> {
  return data as EventData<T>;
}
