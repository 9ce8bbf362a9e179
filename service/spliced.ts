import type { StoredDoc } from '../readmodels/port.ts';
import { ok, type Result } from './errors.ts';

/**
 * Responses are built once, as fields some of which are JSON texts already made (a stored document's
 * `json`, a call measured for the page budget). The REST transport sends the text with those texts
 * spliced in, never parsed nor serialised again; the tool surface gets the same fields as values.
 * Both renderings come from one field list, so the bytes agree by construction (JSON.stringify of
 * the values gives the text).
 */
const SPLICED = Symbol('spliced');

export type Spliced<T> = { readonly [SPLICED]: true; json(): string; value(): T };

/** A value whose JSON text is known (or made on first use), the value itself made only when asked for. */
export function spliced<T>(json: string | (() => string), value: () => T): Spliced<T> {
  let text = typeof json === 'string' ? json : undefined;
  return {
    [SPLICED]: true,
    json: () => (text ??= (json as () => string)()),
    value,
  };
}

/** A plain value: serialised only if the text is asked for. */
export const plain = <T>(value: T): Spliced<T> => spliced(() => JSON.stringify(value), () => value);

export const storedDoc = <D>(row: StoredDoc<D>): Spliced<D> => spliced(row.json, () => row.doc);

export const storedDocs = <D>(rows: readonly StoredDoc<D>[]): Spliced<D[]> =>
  spliced(() => `[${rows.map((r) => r.json).join(',')}]`, () => rows.map((r) => r.doc));

/** Fields of a response `T` with the keys `K` given as spliced values. */
export type WithSpliced<T, K extends keyof T> = { [P in keyof T]: P extends K ? Spliced<T[P]> : T[P] };

function isSpliced(value: unknown): value is Spliced<unknown> {
  return typeof value === 'object' && value !== null && SPLICED in value;
}

/** The response as a value (the tool surface, tests). */
export function valueOf<T, K extends keyof T>(fields: WithSpliced<T, K>): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) out[key] = isSpliced(value) ? value.value() : value;
  return out as T;
}

/** The response as JSON text: what JSON.stringify(valueOf(fields)) gives, spliced texts left as they are. */
export function jsonOf<T, K extends keyof T>(fields: WithSpliced<T, K>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    const text = isSpliced(value) ? value.json() : JSON.stringify(value);
    // As JSON.stringify does: a member whose value has no JSON form (undefined) is left out.
    if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${parts.join(',')}}`;
}

/** A response ready for either transport: as a value or as JSON text (the same bytes as stringifying the value). */
export type Rendered<T> = { value(): T; json(): string };

export function rendered<T, K extends keyof T>(fields: WithSpliced<T, K>): Rendered<T> {
  return { value: () => valueOf(fields), json: () => jsonOf(fields) };
}

/** The value of a rendered result (what the tool surface and other services use). */
export function asValue<T>(result: Result<Rendered<T>>): Result<T> {
  return result.ok ? ok(result.value.value()) : result;
}
