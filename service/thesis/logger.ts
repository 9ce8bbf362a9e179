/**
 * The logging the thesis feed and reader need: pino-style `(fields, message)`, so a Fastify or
 * pino logger can be passed as is. Callers log contracts, ids, counts and fixed outcome
 * sentences only, never item text or provider bodies.
 */
export type ThesisLogger = {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
};

/** Default: one JSON line per warning or error on stderr; routine info stays quiet. */
export const stderrThesisLogger: ThesisLogger = {
  info() {},
  warn(fields, message) {
    process.stderr.write(`${JSON.stringify({ level: 'warn', msg: message, ...fields })}\n`);
  },
  error(fields, message) {
    process.stderr.write(`${JSON.stringify({ level: 'error', msg: message, ...fields })}\n`);
  },
};

/** What to log of an unexpected error: its name and code, never its message (it may quote data). */
export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { errorName: error.name, ...(typeof code === 'string' ? { errorCode: code } : {}) };
  }
  return { errorName: typeof error };
}
