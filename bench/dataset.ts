/**
 * Bench data sets, built once through the public code path (generate → ingest → catch up) and cached
 * in /tmp/pulseboard-bench-cache/<projects>-<seed>-<days>d/ (a complete build is renamed into place,
 * so an interrupted one is never reused). `--rebuild` (or PULSEBOARD_BENCH_REBUILD=1) builds again.
 * Run alone to warm the cache: `node bench/dataset.ts --projects 100000`.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig, type Config } from '../config/config.ts';
import { defaultCalls } from '../ingest/generate/context.ts';
import { generateLines } from '../ingest/generate/generate.ts';
import { DEFAULT_INGEST_BATCH } from '../ingest/ndjson.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { issueKey } from '../service/access.ts';
import { openStores } from '../service/stores.ts';

export const BENCH_CACHE_ROOT = '/tmp/pulseboard-bench-cache';
export const BENCH_SEED = 7;

export type DataSetSpec = { projects: number; calls: number; days: number };

/** The issue's data set shape: one call per five projects, 30 days; `light` keeps 8 days of history (1M). */
export function dataSetSpec(projects: number, light = false): DataSetSpec {
  return { projects, calls: Math.max(60, Math.round(projects / 5)), days: light ? 8 : 30 };
}

export function dataSetDir(spec: DataSetSpec): string {
  return join(BENCH_CACHE_ROOT, `${spec.projects}-${BENCH_SEED}-${spec.days}d`);
}

export function benchConfig(dir: string): Config {
  // PULSEBOARD_SQLITE_MAP_MB from the environment: the read bench's memory experiments set it.
  const parsed = parseConfig({
    PULSEBOARD_DATA_DIR: dir,
    PULSEBOARD_RATE_LIMIT: '1000000000',
    PULSEBOARD_LOG_LEVEL: 'silent',
    PULSEBOARD_SQLITE_MAP_MB: process.env.PULSEBOARD_SQLITE_MAP_MB,
  });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.config;
}

export const rebuildRequested = (): boolean =>
  process.argv.includes('--rebuild') || process.env.PULSEBOARD_BENCH_REBUILD === '1';

/** The cached data directory for `spec`, built first when missing (or when a rebuild was asked for). */
export async function ensureDataSet(
  spec: DataSetSpec,
  log: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
): Promise<string> {
  const dir = dataSetDir(spec);
  if (existsSync(dir) && !rebuildRequested()) return dir;
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const config = benchConfig(building);
  const stores = await openStores(config);
  const started = Date.now();
  try {
    const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
    let messages = 0;
    const options = {
      ...spec,
      seed: BENCH_SEED,
      calls: spec.calls || defaultCalls(spec.projects),
      hotContractCalls: 0,
      followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER,
    };
    // The batch path `pulseboard ingest` takes, with its batch size.
    let batch: string[] = [];
    for (const line of generateLines(options)) {
      batch.push(line);
      messages += 1;
      if (batch.length === DEFAULT_INGEST_BATCH) {
        await ingestor.ingestBatch(batch, 'ndjson');
        batch = [];
      }
      if (messages % 200_000 === 0)
        log(`  ingested ${messages} messages (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
    if (batch.length > 0) await ingestor.ingestBatch(batch, 'ndjson');
    log(`  ingested ${messages} messages in ${((Date.now() - started) / 1000).toFixed(0)} s; catching up`);
    await stores.catchUp();
    log(`  data set ${dir} built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
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
