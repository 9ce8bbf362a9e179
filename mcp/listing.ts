import { z } from 'zod';
import { errorSchema } from '../readmodels/schemas.ts';
import { advertised } from '../service/requests/params.ts';
import type { Tool } from './tools.ts';

export type JsonSchema = Record<string, unknown>;

/**
 * Why ours and not the SDK's conversion: zod's own JSON Schema makes tools/list about 95 KB, over the 26 KB
 * an agent is given for it (issue 58 item 5).
 *
 * A zod schema as the JSON Schema tools/list shows. Kept small because every agent pays for it in
 * context on every connect: a `format` replaces zod's long date-time and uuid regexes (the
 * validators that matter run on the server anyway), parameters registered in `advertised` show
 * their typed form (an integer with bounds and default, not "number or digit string"), and a
 * sub-schema used more than once is written once under `definitions`.
 */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  return compact(generated(schema, io), io, true) as JsonSchema;
}

function generated(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-7',
    io,
    override(ctx) {
      const json = ctx.jsonSchema as JsonSchema;
      const listed = advertised.get(ctx.zodSchema as unknown as z.ZodType);
      if (listed) {
        for (const key of Object.keys(json)) if (key !== 'description') delete json[key];
        Object.assign(json, listed);
      }
      if (typeof json.format === 'string' && json.pattern !== undefined) delete json.pattern;
    },
  });
  return rest;
}

const SAFE_INT = Number.MAX_SAFE_INTEGER;

const mapValues = (properties: JsonSchema, io: 'input' | 'output'): JsonSchema =>
  Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, compact(schema, io)]));

/**
 * Shorter spellings with the same meaning: `anyOf [T, null]` becomes `type: [T, "null"]`, and the
 * safe-integer bounds zod writes on every integer are left out (JSON numbers have no such bound).
 */
function compact(node: unknown, io: 'input' | 'output', top = false): unknown {
  if (Array.isArray(node)) return node.map((item) => compact(item, io, top));
  if (typeof node !== 'object' || node === null) return node;
  let json: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    json[key] = key === 'properties' ? mapValues(value as JsonSchema, io) : compact(value, io, top && key === 'anyOf');
  }
  if (json.maximum === SAFE_INT) delete json.maximum;
  if (json.minimum === -SAFE_INT) delete json.minimum;
  json = foldNullable(json);
  if (io === 'output') {
    // Every field of a result is always present (null when unknown) and results carry no others:
    // the instructions say so once instead of every object listing its keys again. The top level
    // keeps its keys, so a result and an error envelope cannot pass for each other.
    if (!top) delete json.required;
    delete json.additionalProperties;
    // Bounds on a result bind what the server sends, not what an agent may send: nothing to act on.
    delete json.maxItems;
    delete json.maxLength;
    delete json.minimum;
    delete json.maximum;
    // An enum or const names its values, and `properties` already says "object".
    if ((json.enum !== undefined || json.const !== undefined) && typeof json.type === 'string') delete json.type;
    if (json.properties !== undefined && json.type === 'object') delete json.type;
  }
  return json;
}

/** `anyOf [T, null]` as `type: [T, "null"]` (T a plain type, not an enum or const). */
function foldNullable(json: JsonSchema): JsonSchema {
  const anyOf = json.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return json;
  const isNull = (s: JsonSchema) => s.type === 'null' && Object.keys(s).length === 1;
  const [first, second] = anyOf as JsonSchema[];
  const other = isNull(second!) ? first! : isNull(first!) ? second! : null;
  if (!other) return json;
  const { anyOf: _folded, ...outer } = json;
  if (Object.keys(outer).some((key) => key in other)) return json;
  if (Array.isArray(other.enum) && other.const === undefined)
    return { ...outer, ...other, enum: [...(other.enum as unknown[]), null] };
  // An output object may have lost its `type: "object"` already (see compact).
  const type =
    typeof other.type === 'string'
      ? other.type
      : other.type === undefined && other.properties !== undefined
        ? 'object'
        : null;
  if (type === null || other.enum !== undefined || other.const !== undefined) return json;
  return { ...outer, ...other, type: [type, 'null'] };
}

/** Sub-schemas at least this long that occur twice or more are written once, under `definitions`. */
const SHARED_MIN_CHARS = 120;

/**
 * Writes every sub-schema that occurs more than once (and is not tiny) once under `definitions`,
 * named after the property where it first occurs, and refers to it elsewhere.
 */
export function shareDefinitions(root: JsonSchema): JsonSchema {
  const seen = new Map<string, { count: number; name: string }>();
  const visit = (node: unknown, name: string): void => {
    if (Array.isArray(node)) return node.forEach((item) => visit(item, name));
    if (typeof node !== 'object' || node === null) return;
    const text = JSON.stringify(node);
    if (text.length >= SHARED_MIN_CHARS) {
      const entry = seen.get(text);
      if (entry) {
        entry.count += 1;
        return; // its inside is counted once
      }
      seen.set(text, { count: 1, name });
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties') for (const [prop, schema] of Object.entries(value as JsonSchema)) visit(schema, prop);
      else visit(value, key === 'items' ? `${name}Item` : name);
    }
  };
  visit(root, 'shared');
  const shared = new Map<string, string>();
  const used = new Set<string>();
  for (const [text, { count, name }] of seen) {
    if (count < 2) continue;
    let unique = name;
    for (let n = 2; used.has(unique); n++) unique = `${name}${n}`;
    used.add(unique);
    shared.set(text, unique);
  }
  if (shared.size === 0) return root;
  const definitions: JsonSchema = {};
  const replace = (node: unknown, top: boolean): unknown => {
    if (Array.isArray(node)) return node.map((item) => replace(item, false));
    if (typeof node !== 'object' || node === null) return node;
    const name = top ? undefined : shared.get(JSON.stringify(node));
    if (name !== undefined) {
      if (!(name in definitions)) definitions[name] = replace(node, true);
      return { $ref: `#/definitions/${name}` };
    }
    const copy: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      copy[key] =
        key === 'properties'
          ? Object.fromEntries(Object.entries(value as JsonSchema).map(([p, v]) => [p, replace(v, false)]))
          : replace(value, false);
    }
    return copy;
  };
  const replaced = replace(root, true) as JsonSchema;
  return { ...replaced, definitions };
}

/**
 * Objects nested deeper than `depth` objects (the root counts as 1) are shown by type only (the
 * result's description says where they are detailed); what remains still admits every result.
 */
export function summarizeBelow(node: unknown, depth: number, level = 0): unknown {
  if (Array.isArray(node)) return node.map((item) => summarizeBelow(item, depth, level));
  if (typeof node !== 'object' || node === null) return node;
  const json = node as JsonSchema;
  const isObject = json.properties !== undefined;
  // The note is said once, on the result (toolListing), rather than on every object cut short.
  if (isObject && level >= depth) return { type: json.type ?? 'object' };
  const next = isObject ? level + 1 : level;
  const copy: JsonSchema = {};
  for (const [key, value] of Object.entries(json)) {
    copy[key] =
      key === 'properties'
        ? Object.fromEntries(Object.entries(value as JsonSchema).map(([p, v]) => [p, summarizeBelow(v, depth, next)]))
        : summarizeBelow(value, depth, next);
  }
  return copy;
}

/** The input schema with this surface's own defaults stated on its properties. */
function withDefaults(schema: JsonSchema, defaults: Record<string, unknown> | undefined): JsonSchema {
  if (defaults === undefined) return schema;
  const properties = { ...(schema.properties as Record<string, JsonSchema>) };
  for (const [name, value] of Object.entries(defaults)) properties[name] = { ...properties[name], default: value };
  return { ...schema, properties };
}

/** One entry of the tools/list result. */
export type ToolListing = {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint: boolean };
};

/**
 * The error envelope as every result schema lists it: its codes are named once, in the server's
 * instructions, rather than in each tool.
 */
const listedErrorSchema = errorSchema.extend({ error: errorSchema.shape.error.extend({ code: z.string() }) });

/**
 * The output schema admits the REST 200 body or the error envelope: error results carry the
 * envelope as structured content, and SDK 1.x clients validate that against the output schema
 * even on `isError` results (typescript-sdk issue #1943).
 */
export function toolListing(tool: Tool): ToolListing {
  let output = jsonSchemaOf(tool.outputSchema, 'output');
  if (tool.outputDetail)
    output = {
      description: tool.outputDetail.note,
      ...(summarizeBelow(output, tool.outputDetail.depth) as JsonSchema),
    };
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: shareDefinitions(withDefaults(jsonSchemaOf(tool.input.schema, 'input'), tool.inputDefaults)),
    outputSchema: shareDefinitions({
      type: 'object',
      anyOf: [output, jsonSchemaOf(tool.errorSchema ?? listedErrorSchema, 'output')],
    }),
    // destructiveHint and idempotentHint mean something only for a tool that writes.
    annotations: tool.readOnly
      ? { readOnlyHint: true, openWorldHint: false }
      : { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  };
}
