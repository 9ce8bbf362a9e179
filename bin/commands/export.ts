import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { openEventLog } from '../../eventstore/open.ts';
import {
  exportEvents,
  PRIVATE_FIELDS,
  PRIVATE_TYPE_PREFIXES,
  type ExportProgress,
  type ExportSummary,
} from '../../service/export.ts';
import { dateTimeParam } from '../../service/requests/params.ts';
import { parseErrorReason, usageError as oneLineUsageError } from '../args.ts';
import { openForCommand } from '../command-stores.ts';

const USAGE = `usage: pulseboard export --from ISO --to ISO [--types PREFIX,…] [--include-private] [--out FILE|-]
       pulseboard export --format parquet|ndjson [--as-of ISO|CURSOR] --out DIR

The second form writes the board as of a point for analysts (see pulseboard export --format parquet --help).

Writes the events the archive recorded in [--from, --to) as NDJSON, one recorded event per line
({id, stream, revision, position, type, data, metadata, recordedAt}), in log order, streaming.
Events appended after the export started are not included. Progress goes to stderr.

  --from, --to       ISO 8601 date-times; recordedAt (when the archive stored the event) is compared
  --types P,…        only event types starting with one of these prefixes (e.g. project.,call.)
  --include-private  also thesis-feed events (${PRIVATE_TYPE_PREFIXES.map((p) => `${p}*`).join(', ')} without it are left out)
                     and private fields (thesis text, voter names, research questions/answers);
                     without it those fields read "[withheld]"
  --out FILE|-       where to write (default: stdout); a file appears only once complete

Exit status: 0 written, 1 failed, 2 usage error.
`;

type Options = { from: string; to: string; types: string[] | undefined; includePrivate: boolean; out: string };
type Parsed = { ok: true; options: Options } | { ok: true; help: true } | { ok: false; reason: string };

function parse(args: string[]): Parsed {
  let values: { from?: string; to?: string; types?: string; 'include-private'?: boolean; out?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        from: { type: 'string' },
        to: { type: 'string' },
        types: { type: 'string' },
        'include-private': { type: 'boolean' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return { ok: false, reason: parseErrorReason(error) };
  }
  if (values.help) return { ok: true, help: true };
  for (const name of ['from', 'to'] as const) {
    const value = values[name];
    if (value === undefined) return { ok: false, reason: `--${name} is required` };
    if (!dateTimeParam.safeParse(value).success)
      return { ok: false, reason: `--${name} must be an ISO 8601 date-time, e.g. 2026-11-20T08:00:00Z` };
  }
  const from = new Date(values.from!).toISOString();
  const to = new Date(values.to!).toISOString();
  if (Date.parse(from) >= Date.parse(to)) return { ok: false, reason: '--from must be earlier than --to' };
  let types: string[] | undefined;
  if (values.types !== undefined) {
    types = values.types.split(',').map((t) => t.trim());
    if (types.some((t) => !/^[A-Za-z0-9_.-]{1,100}$/.test(t))) {
      return {
        ok: false,
        reason: '--types must be a comma-separated list of event type prefixes, e.g. project.,call.',
      };
    }
  }
  if (values.out === '') return { ok: false, reason: '--out needs a file name, or - for stdout' };
  return {
    ok: true,
    options: { from, to, types, includePrivate: values['include-private'] === true, out: values.out ?? '-' },
  };
}

/** Writes lines with backpressure; the first stream error fails the next write. */
function lineSink(stream: Writable) {
  let failure: Error | null = null;
  stream.on('error', (error) => {
    failure = error;
  });
  return {
    async write(line: string) {
      if (failure) throw failure;
      if (!stream.write(line)) await once(stream, 'drain');
    },
    async end() {
      if (failure) throw failure;
      stream.end();
      await once(stream, 'finish');
    },
  };
}

function formatProgress(p: ExportProgress): string {
  const seconds = Math.max(p.elapsedMs, 1) / 1000;
  const percent = p.head > 0 ? ((p.position / p.head) * 100).toFixed(1) : '100.0';
  const rate = p.position / seconds;
  const left = rate > 0 ? `about ${Math.ceil((p.head - p.position) / rate)} s left (at most)` : 'time left unknown';
  return `export: ${p.written} events written, ${Math.round(p.scanned / seconds)} events/s, position ${p.position} of ${p.head} (${percent}%), ${left}`;
}

function privacyReport(summary: ExportSummary, includePrivate: boolean): string {
  if (includePrivate) {
    return 'export: --include-private: thesis-feed and access events and private fields (thesis text included) are in this export; do not publish it\n';
  }
  const leftOut = Object.entries(summary.leftOut);
  const withheld = Object.entries(summary.withheld);
  const count = (entries: [string, number][]) => entries.reduce((n, [, c]) => n + c, 0);
  const lines = [
    `export: private events are left out (${PRIVATE_TYPE_PREFIXES.map((p) => `${p}*`).join(', ')}): ${count(leftOut)} in this range` +
      (leftOut.length > 0 ? ` (${leftOut.map(([p, c]) => `${p}* ${c}`).join(', ')})` : ''),
    `export: private fields read "[withheld]" (${Object.entries(PRIVATE_FIELDS)
      .map(([type, fields]) => `${type} ${fields.join('/')}`)
      .join(', ')}): ${count(withheld)} withheld` +
      (withheld.length > 0 ? ` (${withheld.map(([f, c]) => `${f} ${c}`).join(', ')})` : ''),
    'export: add --include-private to include them',
  ];
  return `${lines.join('\n')}\n`;
}

export async function run(args: string[]): Promise<number> {
  const parsed = parse(args);
  if (!parsed.ok) {
    return oneLineUsageError('export', parsed.reason);
  }
  if ('help' in parsed) {
    process.stdout.write(USAGE);
    return 0;
  }
  const { options } = parsed;
  const started = await openForCommand('export', 'the event log', openEventLog, 2);
  if (!started.ok) return started.status;
  const log = started.opened;

  const toFile = options.out !== '-';
  const partial = `${options.out}.partial-${process.pid}`;
  let stream: Writable;
  try {
    stream = toFile ? createWriteStream(partial, { flags: 'wx' }) : process.stdout;
    if (toFile) await once(stream, 'open');
  } catch (error) {
    await log.close();
    process.stderr.write(
      `pulseboard export: cannot write ${options.out}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`,
    );
    return 1;
  }
  const sink = lineSink(stream);
  let lastPrinted = -Infinity;
  let written = 0;
  try {
    const summary = await exportEvents(
      log,
      {
        from: options.from,
        to: options.to,
        includePrivate: options.includePrivate,
        ...(options.types ? { typePrefixes: options.types } : {}),
      },
      {
        write: async (line) => {
          await sink.write(line);
          written += 1;
        },
        onProgress: (progress) => {
          const now = performance.now();
          if (now - lastPrinted < 1000) return;
          lastPrinted = now;
          process.stderr.write(`${formatProgress(progress)}\n`);
        },
      },
    );
    if (toFile) {
      await sink.end();
      renameSync(partial, options.out);
    }
    process.stderr.write(
      `export: ${summary.written} events written, recorded from ${options.from} until ${options.to}${toFile ? ` to ${options.out}` : ''}\n`,
    );
    process.stderr.write(privacyReport(summary, options.includePrivate));
    return 0;
  } catch (error) {
    if (toFile) {
      stream.destroy();
      rmSync(partial, { force: true });
    }
    const closed = (error as NodeJS.ErrnoException).code === 'EPIPE';
    process.stderr.write(
      closed
        ? `pulseboard export: the output was closed after ${written} events\n`
        : `pulseboard export: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  } finally {
    await log.close();
  }
}
