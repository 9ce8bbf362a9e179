import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { errorSchema } from '../readmodels/schemas.ts';
import { advertised, parseParams } from '../service/requests/params.ts';
import type { Tool } from './tools.ts';

export type JsonSchema = Record<string, unknown>;

/**
 * Ours and not the SDK's conversion, for one reason: zod's JSON Schema of the twelve tools is about 95 KB,
 * and tools/list has 26 KB. zod writes it; this states it shorter: a `format` for its regex, the typed form
 * of a parameter in `advertised`, no safe-integer bounds, and no bounds or key lists on a result.
 */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    ...{ target: 'draft-7', io },
    override({ zodSchema, jsonSchema, path }) {
      const listed = advertised.get(zodSchema as unknown as z.ZodType);
      if (listed) {
        for (const key of Object.keys(jsonSchema)) if (key !== 'description') delete jsonSchema[key];
        Object.assign(jsonSchema, listed);
      }
      if (typeof jsonSchema.format === 'string') delete jsonSchema.pattern;
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      if (jsonSchema.minimum === -Number.MAX_SAFE_INTEGER) delete jsonSchema.minimum;
      if (io === 'input') return;
      // The top level (a union's members too) keeps its keys, so no result passes for another or an error.
      if (path.length > (path[0] === 'anyOf' ? 2 : 0)) delete jsonSchema.required;
      for (const key of ['additionalProperties', 'maxItems', 'maxLength', 'minimum', 'maximum'] as const)
        delete jsonSchema[key];
    },
  });
  return json;
}

/** Objects nested deeper than `depth` objects (the root counts as 1) are shown by type only (see Tool.outputDetail). */
function cutBelow(node: unknown, depth: number, level = 0): unknown {
  if (Array.isArray(node)) return node.map((item) => cutBelow(item, depth, level));
  if (typeof node !== 'object' || node === null) return node;
  const isObject = 'properties' in node;
  if (isObject && level >= depth) return { type: 'object' };
  const next = isObject ? level + 1 : level;
  const entries = Object.entries(node).map(([key, value]) => [
    key,
    key === 'properties'
      ? Object.fromEntries(Object.entries(value as JsonSchema).map(([p, v]) => [p, cutBelow(v, depth, next)]))
      : cutBelow(value, depth, next),
  ]);
  return Object.fromEntries(entries);
}

/** The error envelope as every result schema lists it: its codes are named once, in the instructions. */
const listedErrorSchema = errorSchema.extend({ error: errorSchema.shape.error.extend({ code: z.string() }) });

/**
 * The input schema with this surface's own defaults stated; the output schema admits the REST 200
 * body or the error envelope (SDK 1.x clients validate an `isError` result too, typescript-sdk #1943).
 */
export function toolListing(tool: Tool): { inputSchema: JsonSchema; outputSchema: JsonSchema } {
  const input = jsonSchemaOf(tool.input.schema, 'input');
  const properties = { ...(input.properties as Record<string, JsonSchema>) };
  for (const [name, value] of Object.entries(tool.inputDefaults ?? {}))
    properties[name] = { ...properties[name], default: value };
  const [detail, output] = [tool.outputDetail, jsonSchemaOf(tool.outputSchema, 'output')];
  const listed = detail ? { description: detail.note, ...(cutBelow(output, detail.depth) as JsonSchema) } : output;
  const failure = jsonSchemaOf(tool.errorSchema ?? listedErrorSchema, 'output');
  return { inputSchema: { ...input, properties }, outputSchema: { type: 'object', anyOf: [listed, failure] } };
}

/** A tool as the SDK registers it: arguments validated by the SDK with the tool's zod schema, refused as REST's 400 words it;
 * the result (the REST twin's body) not parsed again (170k of 2.54M instructions; test/mcp/agent.test.ts checks them). */
export function toolConfig(tool: Tool) {
  const { inputSchema, outputSchema } = toolListing(tool);
  const validate = (value: unknown) => {
    const parsed = parseParams(tool.input.schema, value);
    return parsed.ok ? { value: parsed.value as Record<string, unknown> } : { issues: [{ message: parsed.message }] };
  };
  const standard = { version: 1, vendor: 'pulseboard' } as const;
  const listedAs = (json: JsonSchema) => ({ input: () => json, output: () => json });
  return {
    title: tool.title,
    description: tool.description,
    inputSchema: {
      '~standard': { ...standard, validate, jsonSchema: listedAs(inputSchema) },
    } as StandardSchemaWithJSON<unknown, Record<string, unknown>>,
    outputSchema: {
      '~standard': { ...standard, validate: (value: unknown) => ({ value }), jsonSchema: listedAs(outputSchema) },
    },
    // destructiveHint and idempotentHint mean something only for a tool that writes.
    annotations: tool.writes
      ? { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
      : { readOnlyHint: true, openWorldHint: false },
  };
}
