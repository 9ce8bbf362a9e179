import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * Strict argument parsing shared by every command: node:util parseArgs with strict on, so an unknown
 * flag, a missing value or a stray positional is refused. The error is cut to its first sentence
 * (parseArgs appends advice about `--` that only confuses) and printed as one line naming the flag.
 */
export type ParsedArgs<T extends ParseArgsConfig> =
  { ok: true; parsed: ReturnType<typeof parseArgs<T>> } | { ok: false; reason: string };

/** The caller's config must not turn strict off; parseArgs is strict by default. */
export function parseStrict<T extends ParseArgsConfig & { strict?: never }>(config: T): ParsedArgs<T> {
  try {
    return { ok: true, parsed: parseArgs(config) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: firstSentence(message) };
  }
}

function firstSentence(message: string): string {
  const end = message.indexOf('. ');
  return (end < 0 ? message : message.slice(0, end)).replace(/\.$/, '');
}

/** One line on stderr, pointing at the command's --help; the exit status of a usage error. */
export function usageError(command: string, reason: string): number {
  process.stderr.write(`pulseboard ${command}: ${reason} (see 'pulseboard ${command} --help')\n`);
  return 2;
}

/** Help goes to stdout and is not an error. */
export function printHelp(text: string): number {
  process.stdout.write(text);
  return 0;
}

/** The reason of a parseArgs failure, for commands that call parseArgs themselves. */
export function parseErrorReason(error: unknown): string {
  return firstSentence(error instanceof Error ? error.message : String(error));
}
