/**
 * What idle serving processes cost PostgreSQL for following `pulseboard replay` (issue 60): each process
 * keeps a generational read store open (readmodels/generations/), which reads the generation pointer
 * and says which generations it uses. N stores (one generation space, pool and session each, as N
 * processes would have) sit idle for a window; every statement their connections send is counted.
 * Baseline, in the same run: the same stores without the pointer feed (the pointer read every 200 ms,
 * as before NOTIFY). Prints statements/s for N, per process, and at 100 processes.
 * Needs PostgreSQL: BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test); makes and
 * drops a database of its own. BENCH_TIMER_STORES (default 10), BENCH_TIMER_IDLE_MS (default 10000).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openGenerationalReadStore } from '../readmodels/generations/generational-read-store.ts';
import type { GenerationSpace } from '../readmodels/generations/port.ts';
import { createPostgresGenerationSpace } from '../readmodels/postgres/postgres-generations.ts';

const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const STORES = Number(process.env.BENCH_TIMER_STORES ?? 10);
const IDLE_MS = Number(process.env.BENCH_TIMER_IDLE_MS ?? 10_000);

// Every statement any connection of this process sends (pool clients and sessions are pg.Client).
let statements = 0;
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  statements += 1;
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

/** Statements per second sent by `STORES` idle stores over the window. */
async function idleRate(url: string, feed: boolean): Promise<number> {
  const opened = [];
  for (let n = 0; n < STORES; n++) {
    const space: GenerationSpace = createPostgresGenerationSpace(url);
    const followed = feed ? space : { ...space, pointerFeed: undefined };
    const store = await openGenerationalReadStore(followed, { collections: ['projects'] });
    if (!store.ok) throw new Error(store.reason);
    opened.push(store.value);
  }
  await sleep(1_500); // past opening: the first checks, the feeds turning live
  const before = statements;
  const t0 = performance.now();
  await sleep(IDLE_MS);
  const rate = ((statements - before) * 1000) / (performance.now() - t0);
  for (const store of opened) await store.close();
  return rate;
}

export async function main(): Promise<void> {
  const name = `pb_bench_timers_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  try {
    const polled = await idleRate(url.toString(), false);
    const notified = await idleRate(url.toString(), true);
    const line = (label: string, rate: number) =>
      process.stdout.write(
        `${label.padEnd(52)} ${rate.toFixed(2).padStart(8)}/s  ${(rate / STORES).toFixed(3).padStart(7)}/s per process  ${((rate / STORES) * 100).toFixed(1).padStart(7)}/s at 100  ${(rate / polled).toFixed(3).padStart(6)}×\n`,
      );
    process.stdout.write(`statements sent by ${STORES} idle serving stores over ${IDLE_MS} ms\n`);
    line('pointer read every 200 ms (baseline)', polled);
    line('pointer by NOTIFY, generations held by session lock', notified);
  } finally {
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

if (import.meta.main) await main();
