import { createWriteStream, fstatSync } from 'node:fs';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../config/config.ts';
import {
  defaultCalls,
  EPOCH_MS,
  MIN_CALLS,
  MIN_DAYS,
  MIN_PROJECTS,
  type GenerateOptions,
} from '../../ingest/generate/context.ts';
import { generateLines } from '../../ingest/generate/generate.ts';
import { writeLines } from '../../ingest/generate/write.ts';
import { parseErrorReason, usageError as oneLineUsageError } from '../args.ts';
import { createProgress, type Progress } from '../progress.ts';

const USAGE = `usage: pulseboard generate --projects N [--seed S] [--calls N] [--days D] [--hot-contract-calls N] [--out FILE|-]

Writes a deterministic synthetic data set (same options, same bytes) as NDJSON source messages
(docs/source-messages.md), with message times from 2026-10-01T00:00:00Z forward through D days.
  --projects N            projects on the board (at least ${MIN_PROJECTS})
  --seed S                integer seed (default 1)
  --calls N               call records (default one per project, at least ${MIN_CALLS})
  --days D                length of the period (default 30, at least ${MIN_DAYS})
  --hot-contract-calls N  extra calls all naming one contract (default 0)
  --out FILE|-            where to write (default -, stdout)
followers.observed messages name PULSEBOARD_FOLLOWER_PROVIDER (default followerscope).
Writing to a file (--out FILE, or stdout redirected to one), progress goes to stderr: on a terminal
one updating line (share of the period generated, messages/s, time left), otherwise a line every 5
seconds; Ctrl-C says how far it got (the file is then incomplete). Writing into a pipe, it is quiet.
`;

function usageError(message: string): number {
  return oneLineUsageError('generate', message);
}

type Parsed = { ok: true; options: GenerateOptions; out: string; help: boolean } | { ok: false; reason: string };

function integer(
  name: string,
  text: string | undefined,
  fallback: number | null,
  min: number,
): { ok: true; value: number } | { ok: false; reason: string } {
  if (text === undefined) {
    return fallback === null ? { ok: false, reason: `--${name} is required` } : { ok: true, value: fallback };
  }
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    return { ok: false, reason: `--${name} must be a whole number, got ${JSON.stringify(text)}` };
  const value = Number(text);
  if (value < min) return { ok: false, reason: `--${name} must be at least ${min}` };
  return { ok: true, value };
}

function parse(args: string[], followerProvider: string): Parsed {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        projects: { type: 'string' },
        seed: { type: 'string' },
        calls: { type: 'string' },
        days: { type: 'string' },
        'hot-contract-calls': { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: false,
      strict: true,
    }));
  } catch (error) {
    return { ok: false, reason: parseErrorReason(error) };
  }
  if (values.help === true) {
    return {
      ok: true,
      help: true,
      out: '-',
      options: { projects: 0, seed: 0, calls: 0, days: 0, hotContractCalls: 0, followerProvider },
    };
  }
  const projects = integer('projects', values.projects, null, MIN_PROJECTS);
  if (!projects.ok) return projects;
  const fields = [
    integer('seed', values.seed, 1, 0),
    integer('calls', values.calls, defaultCalls(projects.value), MIN_CALLS),
    integer('days', values.days, 30, MIN_DAYS),
    integer('hot-contract-calls', values['hot-contract-calls'], 0, 0),
  ] as const;
  for (const field of fields) if (!field.ok) return field;
  const [seed, calls, days, hot] = fields.map((f) => (f.ok ? f.value : 0)) as [number, number, number, number];
  if (values.out === '') return { ok: false, reason: '--out needs a path, or - for stdout' };
  return {
    ok: true,
    help: false,
    out: values.out ?? '-',
    options: { projects: projects.value, seed, calls, days, hotContractCalls: hot, followerProvider },
  };
}

export async function run(args: string[]): Promise<number> {
  // Flags first: --help and a usage error answer whatever the environment holds.
  const flags = parse(args, '');
  if (!flags.ok) return usageError(flags.reason);
  if (flags.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const config = parseConfig();
  if (!config.ok) return usageError(config.reason);
  const parsed = {
    ...flags,
    options: { ...flags.options, followerProvider: config.config.PULSEBOARD_FOLLOWER_PROVIDER },
  };

  const toStdout = parsed.out === '-';
  const out = toStdout ? process.stdout : createWriteStream(parsed.out);
  // Progress only when the data goes to a file: into a pipe, the reader (e.g. ingest) reports its own.
  const progress =
    toStdout && !stdoutIsFile()
      ? null
      : createProgress({
          label: 'generate',
          unit: 'messages',
          out: process.stderr,
          terminal: process.stderr.isTTY === true,
        });
  const tracker = trackProgress(progress, parsed.options.days);
  const interrupted = () => {
    progress?.end();
    process.stderr.write(
      `pulseboard generate: interrupted at ${tracker.summary()}; ${toStdout ? 'the output' : parsed.out} is incomplete\n`,
    );
    process.exit(130);
  };
  if (progress) process.once('SIGINT', interrupted);
  try {
    if (!toStdout) await once(out, 'open');
    const count = await writeLines(generateLines(parsed.options, tracker.observe), out);
    progress?.end();
    if (!toStdout) {
      out.end();
      await once(out, 'finish');
      process.stderr.write(`pulseboard generate: wrote ${count} messages to ${parsed.out}\n`);
    }
    return 0;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // The reader went away (e.g. `| head`): not an error of ours.
    if (toStdout && code === 'EPIPE') return 0;
    process.stderr.write(
      `pulseboard generate: cannot write ${toStdout ? 'stdout' : parsed.out}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return toStdout ? 1 : 2;
  } finally {
    process.off('SIGINT', interrupted);
    progress?.end();
    if (!toStdout) out.destroy();
  }
}

function stdoutIsFile(): boolean {
  try {
    return fstatSync(1).isFile();
  } catch {
    return false;
  }
}

const DAY_MS = 86_400_000;

/** Messages come in time order over the period, so the share of the period passed is the share done. */
function trackProgress(
  progress: Progress | null,
  days: number,
): { observe: ((message: { at: string }) => void) | undefined; summary: () => string } {
  let written = 0;
  let fraction = 0;
  return {
    observe: progress
      ? (message) => {
          written += 1;
          // Cheap enough per message; reporting itself is throttled.
          if ((written & 1023) !== 0) return;
          fraction = Math.min(Math.max((Date.parse(message.at) - EPOCH_MS) / (days * DAY_MS), 0), 1);
          progress.report({ done: written, fraction });
        }
      : undefined,
    summary: () => progress?.summary({ done: written, fraction }) ?? `${written} messages`,
  };
}
