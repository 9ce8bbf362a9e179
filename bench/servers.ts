/**
 * The bench servers of bench/reads-server.ts, each started in a process of its own, so the load
 * generator and the bench never share the server's event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NO_WARNING, startCommand } from '../bin/start-command.ts';

export type Server = { port: number; pid: number; stop(): Promise<void>; memory(): Promise<string> };

/**
 * `app DATA_DIR` or `bare BODIES_FILE` (see reads-server.ts), once it listens. Both run with the
 * environment and Node flags of `npm start` (the bench's own environment wins where it sets the same
 * variable); PULSEBOARD_BENCH_SERVER_FLAGS, when set, replaces the flags (memory experiments).
 */
export async function startServer(args: string[]): Promise<Server> {
  const start = startCommand();
  const given = process.env.PULSEBOARD_BENCH_SERVER_FLAGS;
  const flags = given === undefined ? start.flags : given.split(' ').filter(Boolean);
  const child: ChildProcess = spawn(
    process.execPath,
    [NO_WARNING, ...flags, join(import.meta.dirname, 'reads-server.ts'), ...args],
    {
      env: { ...start.env, ...process.env },
      // stdin: a pipe the server reads to its end, which comes when this process exits, however it exits.
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench server exited (${code}) before listening`)));
    lines.on('line', (line) => {
      const match = /^listening (\d+)$/.exec(line);
      if (match) resolve(Number(match[1]));
    });
  });
  return {
    port,
    pid: child.pid!,
    memory: () =>
      new Promise<string>((resolve) => {
        const onLine = (line: string) => {
          if (!line.startsWith('memory ')) return;
          lines.off('line', onLine);
          resolve(line.slice('memory '.length));
        };
        lines.on('line', onLine);
        child.kill('SIGUSR2');
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Response headers a bare server sends again: all but those each response gets anew (date, framing, connection, encoding). */
export function replayable(headers: Headers): Record<string, string> {
  const own = new Set([
    'date',
    'connection',
    'keep-alive',
    'content-length',
    'transfer-encoding',
    'content-type',
    'content-encoding',
  ]);
  return Object.fromEntries([...headers].filter(([name]) => !own.has(name)));
}
