import { parseArgs } from 'node:util';
import { openEventLog } from '../../eventstore/open.ts';
import { projectors } from '../../projectors/registry.ts';
import { replayReadModels, type ReplayProgress } from '../../service/replay.ts';
import { EMBEDDED_LIMITS, openGenerationSpace, projectionLimits } from '../../service/stores.ts';
import { parseErrorReason, usageError as oneLineUsageError } from '../args.ts';
import { openForCommand } from '../command-stores.ts';

const USAGE = `usage: pulseboard replay [--batch-size N] [--progress-interval MS]

Rebuilds every read model from the event log, from position 0, into a new generation beside the
live one (the live one keeps serving), then switches over atomically and removes the old
generation: readmodels-<N>.sqlite in the data directory, or <collection>_v<N> collections when
MONGODB_URL is set. A running 'pulseboard serve' follows the switch by itself; delta cursors stay
valid. With MongoDB, the old generation is removed once no process uses it (at most 60 s later;
otherwise the next replay removes it).
Progress goes to stderr: log position reached, events/s, estimated time left.
A replay that fails or is interrupted leaves the live generation untouched; run it again.

  --batch-size N          at most N log positions per commit of each read model (default ${EMBEDDED_LIMITS.batchSize},
                          20000 with MongoDB)
  --progress-interval MS  at most one progress line per MS milliseconds (default 1000; 0: every batch)

Exit status: 0 switched, 1 failed (live generation unchanged), 2 usage error.
`;

type Parsed =
  { ok: true; batchSize: number | undefined; intervalMs: number; help: boolean } | { ok: false; reason: string };

function wholeNumber(
  value: string | undefined,
  name: string,
  min: number,
  max: number,
): { ok: true; value: number | undefined } | { ok: false; reason: string } {
  if (value === undefined) return { ok: true, value: undefined };
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    return { ok: false, reason: `${name} must be a whole number from ${min} to ${max}` };
  return { ok: true, value: Number(value) };
}

function parse(args: string[]): Parsed {
  try {
    const { values } = parseArgs({
      args,
      options: {
        'batch-size': { type: 'string' },
        'progress-interval': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    });
    const batch = wholeNumber(values['batch-size'], '--batch-size', 1, 100_000);
    if (!batch.ok) return batch;
    const interval = wholeNumber(values['progress-interval'], '--progress-interval', 0, 3_600_000);
    if (!interval.ok) return interval;
    return { ok: true, batchSize: batch.value, intervalMs: interval.value ?? 1000, help: values.help === true };
  } catch (error) {
    return { ok: false, reason: parseErrorReason(error) };
  }
}

export function formatProgress(p: ReplayProgress): string {
  const percent = p.head > 0 ? ((p.position / p.head) * 100).toFixed(1) : '100.0';
  const left = p.secondsLeft === null ? 'time left unknown' : `about ${Math.ceil(p.secondsLeft)} s left`;
  return `replay: position ${p.position} of ${p.head} (${percent}%), ${p.eventsApplied} events applied, ${p.eventsPerSecond} events/s, ${left}`;
}

export async function run(args: string[]): Promise<number> {
  const parsed = parse(args);
  if (!parsed.ok) {
    return oneLineUsageError('replay', parsed.reason);
  }
  if (parsed.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const started = await openForCommand('replay', 'the event log', openEventLog, 2);
  if (!started.ok) return started.status;
  const { config, opened: log } = started;

  const space = await openGenerationSpace(config);
  let lastPrinted = -Infinity;
  try {
    const outcome = await replayReadModels({
      space,
      log,
      projectors,
      ...projectionLimits(config, 'replay'),
      ...(parsed.batchSize === undefined ? {} : { batchSize: parsed.batchSize }),
      onProgress: (progress) => {
        const now = performance.now();
        if (now - lastPrinted < parsed.intervalMs) return;
        lastPrinted = now;
        process.stderr.write(`${formatProgress(progress)}\n`);
      },
      onNote: (message) => process.stderr.write(`replay: ${message}\n`),
    });
    if (!outcome.ok) {
      process.stderr.write(`pulseboard replay: ${outcome.reason}\n`);
      return 1;
    }
    if (outcome.leftBehind)
      process.stderr.write(`replay: could not remove ${outcome.leftBehind}; the next replay removes it\n`);
    process.stdout.write(
      `replayed ${outcome.head} log positions (${outcome.eventsApplied} events applied) in ${(outcome.elapsedMs / 1000).toFixed(1)} s; generation ${outcome.generation} is live\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(
      `pulseboard replay: ${error instanceof Error ? error.message : String(error)}; the live generation is unchanged\n`,
    );
    return 1;
  } finally {
    await space.close().catch(() => undefined);
    await log.close();
  }
}
