import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const CLI = join(import.meta.dirname, '../../bin/pulseboard.ts');

export type CliRun = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/**
 * Runs `node bin/pulseboard.ts …` in a child process with only PATH and `env` in its environment,
 * optionally feeding `stdin`; resolves once it has exited.
 */
export function runCli(
  args: string[],
  options: { env?: Record<string, string>; stdin?: string } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, ...args], {
      env: { PATH: process.env['PATH'] ?? '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

export type ServeProcess = { child: ChildProcess; url: string; key: string };

/**
 * Starts `pulseboard serve` on a free port with `env` added to this process's environment and reads its
 * stdout until it printed its URL and, with `key: true`, the local instance's first key.
 */
export async function startServe(
  env: Record<string, string>,
  options: { key?: boolean; args?: string[] } = {},
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', CLI, 'serve', ...(options.args ?? [])],
    {
      env: { ...process.env, PORT: '0', PULSEBOARD_LOG_LEVEL: 'silent', ...env },
      // stderr is not read (a start prints what it loaded there): ignored, so it can never fill and stall the child.
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  let url = '';
  let key = '';
  for await (const line of createInterface({ input: child.stdout })) {
    const listening = /listening on (http:\/\/\S+)\/v1/.exec(line);
    if (listening) url = listening[1]!;
    if (/^pbk_[A-Za-z0-9_-]{43}$/.test(line)) key = line;
    if (url && (key || !options.key)) break;
  }
  return { child, url, key };
}

/** Sends `signal` to a child still running and resolves with its exit code once it has exited. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill(signal);
  return exited;
}
