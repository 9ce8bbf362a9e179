import type { z } from 'zod';

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
