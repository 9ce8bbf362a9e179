import { accessSync, constants, createReadStream, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../config/config.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { createDeadLetterFile, DEFAULT_INGEST_BATCH, ingestNdjson, type NdjsonInput } from '../../ingest/ndjson.ts';
import { openEventLog } from '../../eventstore/open.ts';
import { createIngestor, type BatchIngestor } from '../../ingest/pipeline.ts';
import { createProgress } from '../progress.ts';
import { parseErrorReason, usageError as oneLineUsageError } from '../args.ts';

const USAGE = `usage: pulseboard ingest [--dead-letter PATH] [--batch-size N] [--progress-interval MS] FILE… | -

Appends NDJSON source messages (docs/source-messages.md) to the event log, one message per line; '-' reads stdin.
Prints "accepted N, duplicate N, rejected N". Rejected lines go to the dead-letter file
(default <PULSEBOARD_DATA_DIR>/dead-letter.ndjson) with their file, line, field path and reason.
Messages are stored N at a time (default ${DEFAULT_INGEST_BATCH}), or what was read so far once the input pauses
for a second (a pipe held open: tail -f FILE | pulseboard ingest -), each batch all or nothing: after a crash,
run the same command again; what was stored is reported as duplicate and the rest is stored once.
Progress goes to stderr: on a terminal one updating line (percentage of the files' bytes, lines/s,
time left), otherwise a line every 5 seconds (--progress-interval MS sets the gap). Ctrl-C stops after the batch being stored and says how
far it got; running the same command again finishes the job.
Exit status: 0 all stored, 1 some rejected (or the event log failed), 2 usage error, 130 interrupted.
`;

const DEAD_LETTER_FILE = 'dead-letter.ndjson';

function usageError(message: string): number {
  return oneLineUsageError('ingest', message);
}

/** Every named file must be a readable regular file before anything is appended. */
function checkFile(path: string): string | null {
  try {
    const stat = statSync(path);
    if (!stat.isFile()) return `${path} is not a file`;
    accessSync(path, constants.R_OK);
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `${path} does not exist` : `${path} cannot be read (${code ?? 'error'})`;
  }
}

type Parsed =
  | {
      ok: true;
      files: string[];
      deadLetter: string | undefined;
      batchSize: number | undefined;
      progressIntervalMs: number | undefined;
      help: boolean;
    }
  | { ok: false; reason: string };

function parse(args: string[]): Parsed {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: {
        'dead-letter': { type: 'string' },
        'batch-size': { type: 'string' },
        'progress-interval': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
    const batch = values['batch-size'];
    if (batch !== undefined && (!/^\d+$/.test(batch) || Number(batch) < 1 || Number(batch) > 100_000)) {
      return { ok: false, reason: '--batch-size must be a whole number from 1 to 100000' };
    }
    const interval = values['progress-interval'];
    if (interval !== undefined && (!/^\d+$/.test(interval) || Number(interval) > 3_600_000)) {
      return { ok: false, reason: '--progress-interval must be a whole number of milliseconds from 0 to 3600000' };
    }
    return {
      ok: true,
      files: positionals,
      deadLetter: values['dead-letter'],
      batchSize: batch === undefined ? undefined : Number(batch),
      progressIntervalMs: interval === undefined ? undefined : Number(interval),
      help: values.help === true,
    };
  } catch (error) {
    return { ok: false, reason: parseErrorReason(error) };
  }
}

export async function run(args: string[]): Promise<number> {
  const parsed = parse(args);
  if (!parsed.ok) return usageError(parsed.reason);
  if (parsed.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.files.length === 0) return usageError('name at least one FILE, or - for stdin');
  if (parsed.files.filter((f) => f === '-').length > 1) return usageError('stdin (-) can be read only once');
  if (parsed.deadLetter === '') return usageError('--dead-letter needs a path');
  for (const file of parsed.files) {
    if (file === '-') continue;
    const problem = checkFile(file);
    if (problem) return usageError(problem);
  }

  const configResult = parseConfig();
  if (!configResult.ok) return usageError(configResult.reason);
  const config = configResult.config;

  let log: EventLog;
  try {
    log = await openEventLog(config);
  } catch (error) {
    process.stderr.write(
      `pulseboard ingest: cannot open the event log: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 2;
  }

  const deadLetterPath = parsed.deadLetter ?? join(config.PULSEBOARD_DATA_DIR, DEAD_LETTER_FILE);
  const deadLetter = createDeadLetterFile(deadLetterPath);
  const inputs: NdjsonInput[] = parsed.files.map((file) =>
    file === '-' ? { name: '-', stream: process.stdin } : { name: file, stream: createReadStream(file) },
  );

  // Percentages are the bytes of the lines read against the files' sizes; stdin has no size, so only counts and rate.
  const totalBytes = parsed.files.includes('-')
    ? null
    : parsed.files.reduce((sum, file) => sum + statSync(file).size, 0);
  let linesRead = 0;
  let bytesRead = 0;
  const sample = () => ({ done: linesRead, fraction: totalBytes ? Math.min(bytesRead / totalBytes, 1) : null });
  const progress = createProgress({
    label: 'ingest',
    unit: 'lines',
    out: process.stderr,
    terminal: process.stderr.isTTY === true,
    ...(parsed.progressIntervalMs === undefined ? {} : { intervalMs: parsed.progressIntervalMs }),
  });

  // Messages in batches the log has stored: what an interruption keeps.
  let stored = 0;
  const ingestor = createIngestor(log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
  const counting: BatchIngestor = {
    ingest: (raw, source) => ingestor.ingest(raw, source),
    async ingestBatch(raws, source) {
      const outcomes = await ingestor.ingestBatch(raws, source);
      stored += outcomes.length;
      return outcomes;
    },
  };
  // A batch is one synchronous transaction on the embedded log, so this runs between batches.
  const interrupted = () => {
    progress.end();
    process.stderr.write(
      `pulseboard ingest: interrupted at ${progress.summary(sample())}; ${stored} messages stored in whole batches. Run the same command again to finish: what was stored counts as duplicate.\n`,
    );
    process.exit(130);
  };
  process.once('SIGINT', interrupted);

  try {
    const result = await ingestNdjson(inputs, {
      ingestor: counting,
      deadLetter,
      ...(parsed.batchSize === undefined ? {} : { batchSize: parsed.batchSize }),
      progressIntervalMs: progress.intervalMs,
      onProgress: ({ lines, bytes }) => {
        linesRead = lines;
        bytesRead = bytes;
        progress.report(sample());
      },
    });
    progress.end();
    const { accepted, duplicate, rejected } = result.counts;
    process.stdout.write(`accepted ${accepted}, duplicate ${duplicate}, rejected ${rejected}\n`);
    if (rejected > 0) process.stderr.write(`pulseboard ingest: ${rejected} rejected; see ${deadLetterPath}\n`);
    if (!result.ok) {
      process.stderr.write(
        `pulseboard ingest: stopped at ${result.file}:${result.line}: event log failed: ${result.reason}\n`,
      );
      // Each batch is stored whole or not at all, so what the failure cost is exact (a full disk included).
      process.stderr.write(
        `pulseboard ingest: nothing from ${result.file}:${result.line} on was stored, every batch before it was; ` +
          'once the event log can write again, run the same command: what was stored counts as duplicate.\n',
      );
      return 1;
    }
    return rejected > 0 ? 1 : 0;
  } catch (error) {
    process.stderr.write(`pulseboard ingest: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', interrupted);
    progress.end();
    for (const input of inputs) if (input.stream !== process.stdin) input.stream.destroy();
    await deadLetter.close().catch((error: unknown) => {
      process.stderr.write(
        `pulseboard ingest: dead-letter file ${deadLetterPath}: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    });
    await log.close();
  }
}
