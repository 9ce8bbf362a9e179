import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const CLI = join(import.meta.dirname, '../../bin/pulseboard.ts');

export type CliRun = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/**
 * Runs `node bin/pulseboard.ts …` in a child process with only PATH and `env` in its environment,
 * optionally feeding `stdin`; resolves once it has exited.
 */
export function runCli(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}): Promise<CliRun> {
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
