import { z } from 'zod';

/**
 * What every response field means, attached to the zod schemas in a registry of their own.
 * Only the OpenAPI generation reads it (api/openapi.ts): the MCP tool listings are rendered from
 * the same schemas without it, so they stay small (tools/list has a size budget), and the
 * response bytes are untouched. `describeFields` is typed by the object's shape, so a field added
 * to a schema without a description (readmodels/descriptions.ts, feed-descriptions.ts) does not type-check.
 */
export type SchemaDocs = { description?: string; fields?: Record<string, string> };
export const apiDocs = z.registry<SchemaDocs>();

type AnyObject = z.ZodObject<z.ZodRawShape>;

export function describeFields<S extends AnyObject>(
  schema: S,
  fields: { [K in keyof S['shape']]: string },
  description?: string,
): void {
  apiDocs.add(schema, { fields, ...(description === undefined ? {} : { description }) });
}

/** Unions of objects sharing field names (the history changes): the same meaning in every variant. */
export function describeVariantFields(schema: z.ZodType, fields: Record<string, string>): void {
  apiDocs.add(schema, { fields });
}

export const nullableObject = <S extends AnyObject>(schema: z.ZodNullable<S>): S => schema.unwrap();
