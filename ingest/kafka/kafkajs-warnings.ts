let negativeTimeoutsQuiet = false;

/**
 * kafkajs 2.2.4 (unmaintained) arms timers with negative delays, e.g. its request
 * queue's "check again once unthrottled" when it never was throttled; Node 24 then prints a
 * TimeoutNegativeWarning on every connection. The delay it means is "as soon as possible", which is
 * what Node does with it, so exactly those warnings — raised from inside kafkajs — are dropped; a
 * negative delay anywhere else still warns.
 */
export function quietKafkajsNegativeTimeouts(): void {
  if (negativeTimeoutsQuiet) return;
  negativeTimeoutsQuiet = true;
  const emitWarning = process.emitWarning;
  process.emitWarning = function emitWarningUnlessKafkajsTimer(
    this: NodeJS.Process,
    ...args: Parameters<typeof process.emitWarning>
  ) {
    const [warning, second] = args as [string | Error, unknown];
    const type =
      typeof second === 'string'
        ? second
        : typeof second === 'object' && second !== null
          ? (second as { type?: unknown }).type
          : undefined;
    const name = type ?? (warning instanceof Error ? warning.name : undefined);
    if (name === 'TimeoutNegativeWarning' && raisedInsideKafkajs()) return;
    emitWarning.apply(this, args);
  } as typeof process.emitWarning;
}

function raisedInsideKafkajs(): boolean {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 30;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  return /[\\/]node_modules[\\/]kafkajs[\\/]/.test(stack);
}
