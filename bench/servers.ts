/**
 * The benches' servers, each started in a process of its own (bench/reads-server.ts) so the load
 * generator never shares its event loop, and the load they take (autocannon).
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NO_WARNING, startCommand } from '../bin/start-command.ts';

/** Clock ticks a second (USER_HZ), as /proc counts them. */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Microseconds of CPU the process has used so far, or null where /proc cannot say. */
function processCpuMicros(pid: number): number | null {
  try {
    // The command name (field 2) may hold spaces: the fields after it follow its closing parenthesis.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ', 2)[1]!.split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1e6) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}

type LoadResult = {
  requests: { average: number; total: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
};
type LoadOptions = { url: string; connections: number; duration: number; headers?: Record<string, string> };
const autocannon = createRequire(import.meta.url)('autocannon') as (options: LoadOptions) => Promise<LoadResult>;

const LOAD_SECONDS = Number(process.env.PULSEBOARD_BENCH_SECONDS ?? '2');
const CONNECTIONS = 10;

/**
 * A load of `path` (PULSEBOARD_BENCH_SECONDS, default 2, over 10 connections), with the server's CPU a
 * request (µs of the server process alone; NaN where /proc cannot say). Any answer but 2xx fails it.
 */
export async function loadOn(server: Server, path: string, headers?: Record<string, string>, seconds = LOAD_SECONDS) {
  const before = processCpuMicros(server.pid);
  const url = `http://127.0.0.1:${server.port}${path}`;
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds, headers });
  const after = processCpuMicros(server.pid);
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0)
    throw new Error(`${path}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  const cpuUs = before === null || after === null ? Number.NaN : (after - before) / result.requests.total;
  return { rps: result.requests.average, p99: result.latency.p99, cpuUs };
}

export type Server = { port: number; pid: number; stop(): Promise<void>; memory(): Promise<string> };

/** A response the service sent, to be sent again by bare Fastify; `headers` when the baseline repeats its headers too. */
export type RecordedBody = {
  method: 'GET' | 'POST';
  url: string;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
};

/**
 * `app DATA_DIR` or `bare BODIES_FILE` in a child process, once it listens, with the environment and
 * Node flags of `npm start` (the bench's own environment wins where it sets the same variable);
 * PULSEBOARD_BENCH_SERVER_FLAGS, when set, replaces the flags (memory experiments).
 */
export async function startServer(args: string[]): Promise<Server> {
  const start = startCommand();
  const given = process.env.PULSEBOARD_BENCH_SERVER_FLAGS;
  const flags = given === undefined ? start.flags : given.split(' ').filter(Boolean);
  const child = spawn(process.execPath, [NO_WARNING, ...flags, join(import.meta.dirname, 'reads-server.ts'), ...args], {
    env: { ...start.env, ...process.env },
    // stdin: a pipe the server reads to its end, which comes when this process exits, however it exits.
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
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
  const own = ['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'content-type'];
  return Object.fromEntries([...headers].filter(([name]) => !own.includes(name) && name !== 'content-encoding'));
}
