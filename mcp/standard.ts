import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { parseParams } from '../service/requests/params.ts';
import type { JsonSchema } from './listing.ts';

/**
 * Our zod schemas as the Standard Schema the SDK validates with, each with the compact JSON Schema
 * tools/list shows (listing.ts), converted once at start-up rather than on every listing.
 */

/**
 * A tool's arguments, validated by the SDK before the tool runs: a refusal names the parameter as
 * REST's 400 does (service/requests/params.ts), and the SDK answers it as a tool error (server.ts).
 */
export function argumentsSchema(
  schema: z.ZodObject,
  json: JsonSchema,
): StandardSchemaWithJSON<unknown, Record<string, unknown>> {
  return {
    '~standard': {
      version: 1,
      vendor: 'pulseboard',
      validate(value) {
        const parsed = parseParams(schema, value);
        return parsed.ok
          ? { value: parsed.value as Record<string, unknown> }
          : { issues: [{ message: parsed.message }] };
      },
      jsonSchema: { input: () => json, output: () => json },
    },
  };
}

/** A tool's result: the SDK checks structuredContent with zod's own Standard Schema, and lists `json`. */
export const resultSchema = (schema: z.ZodType, json: JsonSchema): StandardSchemaWithJSON => ({
  '~standard': { ...schema['~standard'], jsonSchema: { input: () => json, output: () => json } },
});
