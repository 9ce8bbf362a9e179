/**
 * The benches' servers, each in a process of its own (bench/reads-server.ts) so the load generator never
 * shares its event loop; the load they take (autocannon); the CPU the host stole meanwhile.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NO_WARNING, startCommand } from '../bin/start-command.ts';

/** Clock ticks a second (USER_HZ), as /proc counts them (100 where getconf fails). */
const clockTicks = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
const TICKS_PER_SECOND = Number(clockTicks.stdout?.trim()) || 100;

/** A /proc file's text, or '' where there is none (not Linux): the figures read from it are then NaN. */
const proc = (path: string): string => (existsSync(path) ? readFileSync(path, 'utf8') : '');

/** Microseconds of CPU the process has used so far. */
function processCpuMicros(pid: number): number {
  // The command name (field 2) may hold spaces: the fields after it follow its closing parenthesis.
  const fields = proc(`/proc/${pid}/stat`).split(') ', 2)[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
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

/** Seconds of a load, and rounds of a load and its baseline back to back. */
export const LOAD_SECONDS = Number(process.env.PULSEBOARD_BENCH_SECONDS ?? '2');
export const ROUNDS = Number(process.env.PULSEBOARD_BENCH_ROUNDS ?? '5');
export const CONNECTIONS = 10;

/** A GET of a path, or a POST and its body (MCP); `amount`: that many requests instead of a duration. */
export type LoadTarget = string | { path: string; method?: 'POST'; body?: string; amount?: number; timeout?: number };

/** A load of `target` over 10 connections, with the server process's CPU µs a request; any answer but 2xx fails it. */
export async function loadOn(
  server: Server,
  target: LoadTarget,
  headers?: Record<string, string>,
  seconds = LOAD_SECONDS,
) {
  const { path, ...request } = typeof target === 'string' ? { path: target } : target;
  const before = processCpuMicros(server.pid);
  const url = `http://127.0.0.1:${server.port}${path}`;
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds, headers, ...request });
  const after = processCpuMicros(server.pid);
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0)
    throw new Error(`${path}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  return { rps: result.requests.average, p99: result.latency.p99, cpuUs: (after - before) / result.requests.total };
}

export type Server = { port: number; pid: number; stop(): Promise<void>; memory(): Promise<string> };

/** A response the service sent, for bare Fastify to send again. */
export type RecordedBody = { url: string; contentType: string; body: string };

/** Bare Fastify sending `bodies` again, from a file of one body a line (at 1M the pages are more text than one JS string holds). */
export async function startBare(file: string, bodies: Iterable<RecordedBody>): Promise<Server> {
  const fd = openSync(file, 'w');
  for (const body of bodies) writeSync(fd, `${JSON.stringify(body)}\n`);
  closeSync(fd);
  return startServer(['bare', file]);
}

/**
 * `app DATA_DIR` or `bare BODIES_FILE` in a child process, once it listens, with the environment and
 * Node flags of `npm start` (the bench's own environment wins where it sets the same variable);
 * PULSEBOARD_BENCH_SERVER_FLAGS, when set, replaces the flags (memory experiments). `under`: a command
 * the server runs under (valgrind), its pid then the server's.
 */
export async function startServer(args: string[], under: string[] = []): Promise<Server> {
  const start = startCommand();
  const given = process.env.PULSEBOARD_BENCH_SERVER_FLAGS;
  const flags = given === undefined ? start.flags : given.split(' ').filter(Boolean);
  const node = [process.execPath, NO_WARNING, ...flags, join(import.meta.dirname, 'reads-server.ts'), ...args];
  const [command, ...rest] = [...under, ...node] as [string, ...string[]];
  const child = spawn(command, rest, {
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

/** The machine's CPU ticks so far and those the host took (/proc/stat's `steal`: other guests' load); zeros where unknown. */
export function cpuTimes(): { steal: number; total: number } {
  // cpu user nice system idle iowait irq softirq steal …
  const ticks = proc('/proc/stat').split('\n', 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  return { steal: ticks[7] ?? 0, total: ticks.reduce((sum, n) => sum + (Number.isFinite(n) ? n : 0), 0) };
}

/** The share of the machine's CPU stolen since `start`: printed beside ratios, which swing with it. */
export function stolenSince(start: { steal: number; total: number }): string {
  const now = cpuTimes();
  const total = now.total - start.total;
  if (total <= 0) return 'CPU stolen by the host: not known here';
  const percent = (100 * (now.steal - start.steal)) / total;
  return `CPU stolen by the host meanwhile: ${percent.toFixed(1)} % of the machine's time${percent >= 5 ? " (other guests' load: the rounds' ratios swing with it)" : ''}`;
}
