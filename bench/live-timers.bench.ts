/**
 * Statements PostgreSQL receives from 10 idle serving stores (generational, as 10 API processes hold
 * them) over 10 s, per process and at 100 processes: the pointer by NOTIFY against the 200 ms pointer
 * read it replaced (issue 60). PostgreSQL as the tests find it; a database of its own.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openGenerationalReadStore } from '../readmodels/generations/generational-read-store.ts';
import type { GenerationSpace } from '../readmodels/generations/port.ts';
import { createPostgresGenerationSpace } from '../readmodels/postgres/postgres-generations.ts';
import { scratchDatabase } from '../test/support/postgres.ts';

const STORES = 10;
const IDLE_MS = 10_000;

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
  const database = await scratchDatabase('pb_bench_timers');
  try {
    const polled = await idleRate(database.url, false);
    const notified = await idleRate(database.url, true);
    const line = (label: string, rate: number) =>
      process.stdout.write(
        `${label.padEnd(52)} ${rate.toFixed(2).padStart(8)}/s  ${(rate / STORES).toFixed(3).padStart(7)}/s per process  ${((rate / STORES) * 100).toFixed(1).padStart(7)}/s at 100  ${(rate / polled).toFixed(3).padStart(6)}×\n`,
      );
    process.stdout.write(`statements sent by ${STORES} idle serving stores over ${IDLE_MS} ms\n`);
    line('pointer read every 200 ms (baseline)', polled);
    line('pointer by NOTIFY, generations held by session lock', notified);
  } finally {
    await database.drop();
  }
}

if (import.meta.main) await main();
