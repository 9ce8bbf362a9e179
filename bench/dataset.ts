/**
 * Bench data sets, built once through the public code path (generate → ingest → catch up) into
 * /tmp/pulseboard-bench-cache/<projects>-<seed>-<days>d/ (renamed into place when complete);
 * `--rebuild` builds again. Warm the cache: `node bench/dataset.ts --projects 100000`.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig, type Config } from '../config/config.ts';
import { generateLines } from '../ingest/generate/generate.ts';
import { DEFAULT_INGEST_BATCH } from '../ingest/ndjson.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { issueKey } from '../service/access.ts';
import { openStores } from '../service/stores.ts';

export const BENCH_SEED = 7;

export type DataSetSpec = { projects: number; calls: number; days: number };

/** The issue's data set shape: one call per five projects, 30 days; `light` keeps 8 days of history (1M). */
export function dataSetSpec(projects: number, light = false): DataSetSpec {
  return { projects, calls: Math.max(60, Math.round(projects / 5)), days: light ? 8 : 30 };
}

export function benchConfig(dir: string): Config {
  // PULSEBOARD_SQLITE_MAP_MB from the environment: the read bench's memory experiments set it.
  const parsed = parseConfig({
    PULSEBOARD_DATA_DIR: dir,
    PULSEBOARD_RATE_LIMIT: '1000000000',
    PULSEBOARD_LOG_LEVEL: 'silent',
    PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: '1000000000',
    PULSEBOARD_SQLITE_MAP_MB: process.env.PULSEBOARD_SQLITE_MAP_MB,
  });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.config;
}

/** The sizes a bench runs: `--only N[,M]` (projects) when given, else its own. */
export function benchSizes(defaults: readonly number[]): number[] {
  const at = process.argv.indexOf('--only');
  if (at < 0) return [...defaults];
  const sizes = (process.argv[at + 1] ?? '').split(',').map(Number);
  if (!sizes.every((n) => Number.isSafeInteger(n) && n > 0))
    throw new Error('--only takes numbers of projects, e.g. --only 10000 or --only 10000,100000');
  return sizes;
}

/** The cached data directory for `spec`, built first when missing (or with `--rebuild`). */
export async function ensureDataSet(spec: DataSetSpec): Promise<string> {
  const dir = `/tmp/pulseboard-bench-cache/${spec.projects}-${BENCH_SEED}-${spec.days}d`;
  if (existsSync(dir) && !process.argv.includes('--rebuild')) return dir;
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const config = benchConfig(building);
  const stores = await openStores(config);
  const since = (started: number) => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  const started = Date.now();
  try {
    const followerProvider = config.PULSEBOARD_FOLLOWER_PROVIDER;
    const ingestor = createIngestor(stores.log, { followerProvider });
    let messages = 0;
    // The batch path `pulseboard ingest` takes, with its batch size.
    let batch: string[] = [];
    for (const line of generateLines({ ...spec, seed: BENCH_SEED, hotContractCalls: 0, followerProvider })) {
      if (batch.push(line) === DEFAULT_INGEST_BATCH) await ingestor.ingestBatch(batch.splice(0), 'ndjson');
      if (++messages % 200_000 === 0) console.log(`  ingested ${messages} messages (${since(started)})`);
    }
    if (batch.length > 0) await ingestor.ingestBatch(batch, 'ndjson');
    console.log(`  ingested ${messages} messages in ${since(started)}; catching up`);
    await stores.catchUp();
    console.log(`  data set ${dir} built in ${since(started)}`);
  } finally {
    await stores.close();
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(building, dir);
  return dir;
}

/** A key for the benches, issued once per cached data set (issuing appends to its log). */
export async function benchKey(dir: string): Promise<string> {
  const file = join(dir, 'bench-key.txt');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const stores = await openStores(benchConfig(dir));
  try {
    const { key } = await issueKey(stores, 'bench');
    await stores.catchUp();
    writeFileSync(file, `${key}\n`);
    return key;
  } finally {
    await stores.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { projects: { type: 'string' }, light: { type: 'boolean' }, rebuild: { type: 'boolean' } },
  });
  const projects = Number(values.projects ?? '10000');
  await ensureDataSet(dataSetSpec(projects, values.light === true));
}
