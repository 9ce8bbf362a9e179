import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { parseParams, type ParseResult } from '../service/requests/params.ts';
import type { JsonSchema } from './listing.ts';

/**
 * Our zod schemas as the Standard Schema the SDK validates with, each with the compact JSON Schema
 * tools/list shows (listing.ts), converted once at start-up rather than on every listing.
 */

/**
 * A tool's arguments: the SDK runs the tool's input schema before the tool, and a refusal comes
 * back as the parse result, so the tool answers it in the `{error:{code,message}}` envelope (the
 * SDK's own refusal is a bare text that names no code).
 */
export function argumentsSchema(
  schema: z.ZodObject,
  json: JsonSchema,
): StandardSchemaWithJSON<unknown, ParseResult<Record<string, unknown>>> {
  return {
    '~standard': {
      version: 1,
      vendor: 'pulseboard',
      validate: (value) => ({ value: parseParams(schema, value) as ParseResult<Record<string, unknown>> }),
      jsonSchema: { input: () => json, output: () => json },
    },
  };
}

/** A tool's result: the SDK checks structuredContent against the REST twin's response schema. */
export function resultSchema(schema: z.ZodType, json: JsonSchema): StandardSchemaWithJSON {
  return {
    '~standard': {
      version: 1,
      vendor: 'pulseboard',
      validate(value) {
        const parsed = schema.safeParse(value);
        if (parsed.success) return { value };
        return {
          issues: parsed.error.issues.map((issue) => ({ message: issue.message, path: issue.path as PropertyKey[] })),
        };
      },
      jsonSchema: { input: () => json, output: () => json },
    },
  };
}
