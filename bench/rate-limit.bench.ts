/**
 * Consumes per second of the Redis limiter (a redis-server of its own on loopback; REDIS_SERVER_BIN)
 * as a ratio to the in-process limiter measured in the same run.
 */
import { createInProcessLimiter } from '../service/rate/in-process.ts';
import type { RateLimiter } from '../service/rate/port.ts';
import { createRedisLimiter } from '../service/rate/redis.ts';
import { startRedisServer } from '../test/support/redis-server.ts';

const KEYS = 1000;
// High enough that nothing is refused: the bench measures the counting path, not refusals.
const LIMIT = 1_000_000_000;

type Figure = { name: string; consumes: number; seconds: number; perSecond: number };

/** `concurrency` callers each consuming in turn, spread over KEYS key ids. */
async function measure(name: string, limiter: RateLimiter, total: number, concurrency: number): Promise<Figure> {
  let next = 0;
  let refused = 0;
  const worker = async () => {
    while (next < total) {
      const i = next;
      next += 1;
      const decision = await limiter.consume(`kid_${i % KEYS}`);
      if (!decision.ok) refused += 1;
    }
  };
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (refused > 0) throw new Error(`${name}: ${refused} consumes were not allowed; the figure would be meaningless`);
  return { name, consumes: total, seconds, perSecond: total / seconds };
}

export async function main(): Promise<void> {
  const inProcess = createInProcessLimiter({ limit: LIMIT });
  await measure('warm-up', inProcess, 50_000, 1);
  const baseline = await measure('in-process', inProcess, 500_000, 1);
  await inProcess.close();

  const server = await startRedisServer();
  const redis = createRedisLimiter({ url: server.url, limit: LIMIT });
  const figures: Figure[] = [];
  try {
    await measure('warm-up', redis, 2_000, 1);
    figures.push(await measure('redis, 1 in flight', redis, 20_000, 1));
    figures.push(await measure('redis, 16 in flight', redis, 100_000, 16));
    figures.push(await measure('redis, 64 in flight', redis, 100_000, 64));
  } finally {
    await redis.close();
    await server.close();
  }

  const row = (f: Figure) =>
    `${f.name.padEnd(22)} ${String(f.consumes).padStart(8)} consumes  ${Math.round(f.perSecond).toLocaleString('en-US').padStart(12)}/s  ` +
    `ratio to in-process ${(f.perSecond / baseline.perSecond).toFixed(4)}`;
  console.log(`rate limiter consumes/s (${KEYS} keys, limit ${LIMIT}, window 60 s)`);
  console.log(row(baseline));
  for (const f of figures) console.log(row(f));
}

if (import.meta.main) await main();
