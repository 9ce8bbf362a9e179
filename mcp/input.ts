import { z } from 'zod';

/** Where a REST parameter travels: path, query string or JSON body. */
export type RestPart = 'params' | 'query' | 'body';

/** The REST request schemas of one operation (service/requests/*.ts), by part. */
export type RestRequest = Partial<Record<RestPart, z.ZodObject>>;

export type RestArguments = Record<RestPart, Record<string, unknown>>;

/**
 * A tool's input derived from its REST twin: every parameter of every part, renamed to
 * camelCase, in one strict object. `toRest` puts validated tool arguments back under their REST
 * names and parts, so the tool calls the service exactly as the route does.
 */
export type ToolInput = {
  schema: z.ZodObject;
  toRest(args: Record<string, unknown>): RestArguments;
};

export const camelCase = (name: string): string => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

export function toolInputFrom(request: RestRequest): ToolInput {
  const shape: Record<string, z.ZodType> = {};
  const origin = new Map<string, { part: RestPart; name: string }>();
  for (const part of ['params', 'query', 'body'] as const) {
    const schema = request[part];
    if (!schema) continue;
    for (const [name, field] of Object.entries(schema.shape)) {
      const camel = camelCase(name);
      if (origin.has(camel))
        throw new Error(`tool input: parameter '${camel}' appears twice (${origin.get(camel)!.part} and ${part})`);
      origin.set(camel, { part, name });
      shape[camel] = field as z.ZodType;
    }
  }
  return {
    schema: z.object(shape).strict(),
    toRest(args) {
      const rest: RestArguments = { params: {}, query: {}, body: {} };
      // for-in over own names: Object.entries would make an array per name on every call.
      for (const camel in args) {
        if (!Object.hasOwn(args, camel)) continue;
        const o = origin.get(camel);
        const value = args[camel];
        if (o && value !== undefined) rest[o.part][o.name] = value;
      }
      return rest;
    },
  };
}
