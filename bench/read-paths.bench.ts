/**
 * Read-path throughput over the real Fastify app (in-process inject, no network), printed as
 * ratios to a baseline measured in the same run: GET /healthz (routing + JSON, no store, no auth).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../api/app.ts';
import { parseConfig } from '../config/config.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { generateLines } from '../ingest/generate/generate.ts';
import { issueKey } from '../service/access.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { createServices } from '../service/services.ts';
import { openStores } from '../service/stores.ts';

const ITERATIONS = 2000;

async function rate(label: string, work: () => Promise<unknown>, iterations = ITERATIONS): Promise<number> {
  for (let i = 0; i < 50; i++) await work();
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) await work();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const perSecond = iterations / seconds;
  process.stdout.write(`${label.padEnd(44)} ${perSecond.toFixed(0).padStart(8)} req/s\n`);
  return perSecond;
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-'));
  try {
    const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '100000000' });
    if (!parsed.ok) throw new Error(parsed.reason);
    const stores = await openStores(parsed.config);
    const ingestor = createIngestor(stores.log, { followerProvider: parsed.config.PULSEBOARD_FOLLOWER_PROVIDER });
    let messages = 0;
    const options = {
      projects: 2000,
      seed: 5,
      calls: 500,
      days: 30,
      hotContractCalls: 0,
      followerProvider: parsed.config.PULSEBOARD_FOLLOWER_PROVIDER,
    };
    for (const line of generateLines(options)) {
      await ingestor.ingest(line, 'ndjson');
      messages += 1;
    }
    // Projection and replay throughput are measured by write-paths.bench.ts.
    await stores.catchUp();
    process.stdout.write(`data set: ${messages} messages, ${await stores.log.headPosition()} events\n`);

    const limiter = await createRateLimiter(parsed.config);
    const services = createServices({ config: parsed.config, stores, limiter });
    const app = buildApp(services);
    await app.ready();
    const { key } = await issueKey(stores, 'bench');
    const headers = { authorization: `Bearer ${key}` };
    const get = (url: string) => () => app.inject({ method: 'GET', url, headers });

    const baseline = await rate('baseline: GET /healthz', () => app.inject({ method: 'GET', url: '/healthz' }));
    const board = await rate('GET /v1/projects (page 1, 50 projects)', get('/v1/projects'));
    const boardDeep = await rate('GET /v1/projects?page=30', get('/v1/projects?page=30'));
    const delta = await rate(
      'GET /v1/projects?since=…&limit=100',
      get('/v1/projects?since=2000-01-01T00:00:00Z&limit=100'),
    );
    const one = await rate('GET /v1/projects/{id}', get('/v1/projects/prj-s5-000042'));
    const context = await rate(
      'GET /v1/projects/{id}?include=context',
      get('/v1/projects/prj-s5-000042?include=context'),
    );
    process.stdout.write('\nratios to the baseline (1.000 = as fast as /healthz):\n');
    for (const [label, value] of Object.entries({ board, boardDeep, delta, one, context })) {
      process.stdout.write(`  ${label.padEnd(12)} ${(value / baseline).toFixed(3)}\n`);
    }
    await app.close();
    await limiter.close();
    await stores.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
