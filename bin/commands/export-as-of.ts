/**
 * `pulseboard export --format`: checks the arguments and runs the export in a worker thread
 * (export-as-of-worker.ts). This thread loads nothing else: the stores and the writer are the thread's.
 */
import { Worker } from 'node:worker_threads';
import { onWorkerEnd } from '../../config/worker-thread.ts';
import type { ExportFormat } from '../../service/analyst-export.ts';
import { parseStrict, printHelp, usageError } from '../args.ts';

const usage = (
  schemaVersion: string,
) => `usage: pulseboard export --format parquet|ndjson [--as-of ISO|CURSOR] --out DIR

Writes the board as it stood at a point, for analysts, into DIR (created if missing):
  projects.<format>  the board as of the point (every Project field; nested objects as JSON text),
                     with seq and writtenAt of each project's write
  calls.<format>     the call records visible at the point, each as it was then, without thesis text
  events.<format>    the log up to the point: position, stream, type, recordedAt, data (JSON text);
                     thesis-feed and access events left out, private fields read "[withheld]"
Parquet files carry the point and schema version ${schemaVersion} in their key-value metadata
(pulseboard.as_of, pulseboard.as_of_cursor, pulseboard.as_of_position, pulseboard.schema_version);
NDJSON exports write them to DIR/manifest.json. Files are written in batches and appear once complete.

  --as-of   an ISO 8601 date-time (the last write recorded at or before it) or a delta cursor
            (exactly that point); default: everything the read models have applied

Exit status: 0 written, 1 failed, 2 usage error.
`;

/**
 * The export thread's V8 heap, in MB: room for a batch being converted and a row group being encoded
 * (the export holds nothing else), so the process's resident set stays flat whatever the board's size.
 */
export const EXPORT_HEAP_LIMITS = { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 };

export async function runAsOfExport(args: string[]): Promise<number> {
  const parsed = parseStrict({
    args,
    options: {
      format: { type: 'string' },
      'as-of': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (!parsed.ok) return usageError('export', parsed.reason);
  const { values } = parsed.parsed;
  if (values.help) return printHelp(usage((await import('../../service/analyst-export.ts')).EXPORT_SCHEMA_VERSION));
  if (values.format !== 'parquet' && values.format !== 'ndjson')
    return usageError('export', '--format must be parquet or ndjson');
  if (values.out === undefined || values.out === '')
    return usageError('export', '--out needs a directory to write the files into');
  return inExportThread({ format: values.format, asOf: values['as-of'], out: values.out });
}

/** What the export thread is handed: the command's checked arguments. */
export type ExportRequest = { format: ExportFormat; asOf: string | undefined; out: string };

/**
 * Runs the export in a worker thread (export-as-of-worker.ts; tests pass stand-ins) with a bounded heap, so the process stays within its memory
 * goal without node flags: an unbounded heap grows with the data set though the export streams.
 */
export function inExportThread(
  request: ExportRequest,
  workerUrl = new URL('./export-as-of-worker.ts', import.meta.url),
): Promise<number> {
  return new Promise((resolve) => {
    const worker = new Worker(workerUrl, {
      workerData: request,
      resourceLimits: EXPORT_HEAP_LIMITS,
    });
    let status: number | null = null;
    worker.on('message', (code: number) => {
      status = code;
    });
    onWorkerEnd(worker, (failure) => {
      if (status !== null) return resolve(status);
      // A thread ended this way (out of its heap) could not remove its partial files itself.
      void import('../../service/analyst-export.ts').then(({ removePartialFiles }) => {
        removePartialFiles(request.out);
        const reason = failure?.message ?? 'the export thread ended';
        process.stderr.write(`pulseboard export: ${reason}\n`);
        resolve(1);
      });
    });
  });
}
