/**
 * Slow and silent clients against the real service and against bare Fastify with its default timeouts
 * (what the service ran before api/http/timeouts.ts), each server in a process of its own, in the same
 * run, at more than one size. Per server and size: how many of the sockets the server still held 15 s
 * after they connected, the server's RSS before, while held and after they were gone, and /healthz
 * requests/s under autocannon while they were held, as a ratio to the same server unloaded.
 *   node bench/slow-clients.bench.ts [--sizes 1000,4000]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HEAD_TIMEOUT_MS } from '../api/http/timeouts.ts';
import { median } from './median.ts';
import { startServer, type Server } from './servers.ts';

const AUTOCANNON = fileURLToPath(import.meta.resolve('autocannon'));
const SLOW_CLIENTS = 10;
/** Past the head deadline with room for Node's 1 s check and a loaded machine. */
const HELD_AFTER_MS = HEAD_TIMEOUT_MS + 5_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** /healthz requests/s: the median of three 1 s autocannon runs (the loaded ones must end within the head deadline). */
async function healthzPerSecond(port: number): Promise<number> {
  const rounds: number[] = [];
  for (let round = 0; round < 3; round++) rounds.push(await autocannonRound(port));
  return median(rounds);
}

function autocannonRound(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const args = [AUTOCANNON, '-j', '-c', '10', '-d', '1', `http://127.0.0.1:${port}/healthz`];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited ${code}`));
      const result = JSON.parse(out) as { requests: { average: number }; non2xx: number; errors: number };
      if (result.non2xx + result.errors > 0) {
        return reject(new Error(`/healthz: ${result.non2xx} non-2xx, ${result.errors} errors`));
      }
      resolve(result.requests.average);
    });
  });
}

/** RSS (MiB) as the server reports it, before and after a full collection. */
async function rss(server: Server): Promise<string> {
  const line = await server.memory();
  const before = /rss=(\d+)/.exec(line)?.[1];
  const after = /after a full collection:.*rss=(\d+)/.exec(line)?.[1];
  return `${before} (${after} after GC)`;
}

type Attack = { sockets: Socket[]; stop(): void };

/** `silent` sockets that never send a byte and SLOW_CLIENTS sending one byte of a request head every 200 ms. */
async function attack(port: number, silent: number): Promise<Attack> {
  const sockets: Socket[] = [];
  const open = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      // Read, so that a close by the server ends (and destroys) the socket here.
      socket.resume();
      socket.once('connect', () => resolve(socket));
      socket.once('error', reject);
    });
  // In waves below the listen backlog, so every socket reaches the server rather than the kernel's queue.
  for (let opened = 0; opened < silent; opened += 250) {
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(250, silent - opened) }, open))));
    await sleep(100);
  }
  const head = `GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Pad: ${'a'.repeat(4000)}\r\n\r\n`;
  const timers: NodeJS.Timeout[] = [];
  for (let i = 0; i < SLOW_CLIENTS; i++) {
    const socket = await open();
    sockets.push(socket);
    let sent = 0;
    timers.push(setInterval(() => socket.writable && socket.write(head[sent++ % head.length]!), 200));
  }
  return {
    sockets,
    stop() {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
    },
  };
}

async function measure(label: string, server: Server, size: number): Promise<void> {
  const idle = await healthzPerSecond(server.port);
  const before = await rss(server);
  const held = await attack(server.port, size);
  const connectedAt = Date.now();
  const whileHeld = await rss(server);
  const loaded = await healthzPerSecond(server.port);
  await sleep(Math.max(0, connectedAt + HELD_AFTER_MS - Date.now()));
  const stillOpen = held.sockets.filter((socket) => !socket.destroyed).length;
  held.stop();
  await sleep(2_000);
  const after = await rss(server);
  process.stdout.write(
    `${label.padEnd(34)} ${String(size + SLOW_CLIENTS).padStart(5)} sockets: ` +
      `held by the server after ${HELD_AFTER_MS / 1000} s ${String(stillOpen).padStart(5)}; ` +
      `RSS MiB before ${before}, held ${whileHeld}, after ${after}; ` +
      `/healthz ${Math.round(loaded)} req/s, ${(loaded / idle).toFixed(2)} of unloaded (${Math.round(idle)})\n`,
  );
}

export async function main(): Promise<void> {
  const sizesArg = process.argv.indexOf('--sizes');
  const sizes = sizesArg > 0 ? process.argv[sizesArg + 1]!.split(',').map(Number) : [1000, 4000];
  const dir = mkdtempSync(join(tmpdir(), 'pb-slow-clients-'));
  const bodies = join(dir, 'bodies.json');
  const type = 'application/json; charset=utf-8';
  const healthz = { method: 'GET', url: '/healthz', contentType: type, body: '{"status":"ok"}' };
  writeFileSync(bodies, JSON.stringify([healthz]));
  try {
    for (const size of sizes) {
      for (const [label, args] of [
        ['pulseboard (api/http/timeouts.ts)', ['app', join(dir, `data-${size}`)]],
        ['bare Fastify, default timeouts', ['bare', bodies]],
      ] as const) {
        const server = await startServer([...args]);
        try {
          await measure(label, server, size);
        } finally {
          await server.stop();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
