import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

import { CLI, runCli, type CliRun } from '../support/cli.ts';

export { CLI, type CliRun };

/** Runs `pulseboard …` in a child process on a data directory; resolves once it has exited. */
export const pulseboard = (args: string[], dataDir: string): Promise<CliRun> =>
  runCli(args, { env: { PULSEBOARD_DATA_DIR: dataDir } });

export type ReplayChild = {
  child: ChildProcess;
  /** Progress lines seen so far. */
  progressLines: () => number;
  exited: Promise<CliRun>;
};

/**
 * Starts `pulseboard replay` with a progress line per batch. `onProgress` sees each progress
 * line's number as it arrives, so a test can act (or SIGKILL) at a chosen line, not a chosen time.
 */
export function startReplay(
  dataDir: string,
  options: {
    batchSize: number;
    env?: Record<string, string>;
    onProgress?: (line: number, child: ChildProcess) => void;
  },
): ReplayChild {
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      CLI,
      'replay',
      '--batch-size',
      String(options.batchSize),
      '--progress-interval',
      '0',
    ],
    {
      env: { PATH: process.env['PATH'] ?? '', PULSEBOARD_DATA_DIR: dataDir, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let progress = 0;
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderr += `${line}\n`;
    if (/^replay: position \d+ of \d+/.test(line)) {
      progress += 1;
      options.onProgress?.(progress, child);
    }
  });
  const exited = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, progressLines: () => progress, exited };
}

/** Kills a replay a failed test left running, so it cannot write into a removed data directory. */
export async function stopReplay(replay: ReplayChild | null): Promise<void> {
  if (!replay || replay.child.exitCode !== null || replay.child.signalCode !== null) return;
  replay.child.kill('SIGKILL');
  await replay.exited;
}

/** Polls `check` until it holds (at most `tries` times, `everyMs` apart); returns whether it did. */
export async function eventually(check: () => Promise<boolean> | boolean, tries = 500, everyMs = 20): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await sleep(everyMs);
  }
  return false;
}

/** A response body without its read times, which differ on every read. */
export function stable(body: any): any {
  const copy = structuredClone(body);
  delete copy.readAt;
  if (copy.context?.freshness) delete copy.context.freshness.readAt;
  return copy;
}
