import type { z } from 'zod';
import type { EventLog } from '../eventstore/port.ts';

/**
 * Opaque cursors: base64url of a small JSON object validated by a zod schema on the way back in.
 * Each cursor kind binds its own filters; callers compare them and refuse a mismatch.
 */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export type DecodedCursor<T> = { ok: true; value: T } | { ok: false };

export function decodeCursor<S extends z.ZodType>(schema: S, cursor: string): DecodedCursor<z.output<S>> {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return { ok: false };
  try {
    const parsed = schema.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    return parsed.success ? { ok: true, value: parsed.data } : { ok: false };
  } catch {
    return { ok: false };
  }
}

/**
 * Whether a position lies within the event log, for a cursor that names one past what the read
 * models have applied: a cursor this service issued never lies past the log's head. The head only
 * grows, so the largest seen answers every position at or below it without a read; only a
 * position past it reads the head again (asked only for such positions, which are rare).
 */
export type LogHead = { holds(position: number): Promise<boolean> };

export function createLogHead(log: Pick<EventLog, 'headPosition'>): LogHead {
  let known = -1;
  return {
    async holds(position) {
      if (position <= known) return true;
      known = Math.max(known, await log.headPosition());
      return position <= known;
    },
  };
}
