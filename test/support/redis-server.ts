import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A private redis-server for tests: loopback only, no persistence, on a free port that stays the
 * same across restart() so clients can reconnect to "the same Redis".
 */
export type RedisServer = {
  readonly port: number;
  readonly url: string;
  /** SIGKILL, as a crash would; resolves once the process has exited. */
  stop(): Promise<void>;
  /** SIGSTOP: the port keeps accepting connections but nothing is answered. */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Starts a fresh (empty) server on the same port; stops the running one first. */
  restart(): Promise<void>;
  /** Stops the server and removes its directory; safe to call more than once. */
  close(): Promise<void>;
};

const REDIS_BIN = process.env.REDIS_SERVER_BIN ?? '/usr/bin/redis-server';
/** How long start-up may take before the helper gives up (a bound, not a measurement). */
const READY_ATTEMPTS = 200;
const READY_POLL_MS = 25;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address for a free port');
  return address.port;
}

/** One PING over a raw socket, so readiness does not depend on the client under test. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/** `bind`: the addresses it listens on besides 127.0.0.1 (a host's address in the fault test's network). */
export async function startRedisServer(options: { bind?: readonly string[] } = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pb-redis-'));
  let child: ChildProcess | null = null;
  let closed = false;

  async function spawnServer(): Promise<void> {
    const proc = spawn(
      REDIS_BIN,
      [
        ...['--port', String(port), '--bind', '127.0.0.1', ...(options.bind ?? []), '--protected-mode', 'no'],
        ...['--save', '', '--appendonly', 'no', '--dir', dir],
      ],
      {
        stdio: 'ignore',
      },
    );
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    child = proc;
    for (let attempt = 0; attempt < READY_ATTEMPTS; attempt += 1) {
      if (proc.exitCode !== null || proc.signalCode !== null) break;
      if (await answersPing(port)) return;
      await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
    }
    proc.kill('SIGKILL');
    throw new Error(`redis-server did not answer PING on 127.0.0.1:${port}`);
  }

  async function stop(): Promise<void> {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill('SIGKILL');
    await exited;
  }

  await spawnServer();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    pause: () => {
      child?.kill('SIGSTOP');
    },
    resume: () => {
      child?.kill('SIGCONT');
    },
    restart: async () => {
      await stop();
      await spawnServer();
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
