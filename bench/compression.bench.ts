/**
 * Board page (`GET /v1/projects`, 50 projects with dossiers) over real HTTP: requests per second
 * with compression on (br, gzip) against off (no Accept-Encoding), and a revalidation that matches
 * (If-None-Match: 304), each as a ratio to the uncompressed read measured in the same run, in
 * alternating rounds so other load on the machine hits every variant alike. Also the bytes on the
 * wire per encoding. autocannon runs in a process of its own, so the server's CPU is its own.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../api/app.ts';
import { parseConfig } from '../config/config.ts';
import { generateLines } from '../ingest/generate/generate.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { issueKey } from '../service/access.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { createServices } from '../service/services.ts';
import { openStores } from '../service/stores.ts';
import { median } from './median.ts';

const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = 10;
const AUTOCANNON = fileURLToPath(import.meta.resolve('autocannon'));

type Variant = { label: string; headers: Record<string, string>; status: number };
type Measured = { perSecond: number; cpuMicrosPerRequest: number; bytesPerRequest: number };

function autocannon(
  url: string,
  headers: Record<string, string>,
  duration: number,
): Promise<{
  requests: { average: number; total: number };
  throughput: { total: number };
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count: number }>;
}> {
  const args = [AUTOCANNON, '-j', '-c', String(CONNECTIONS), '-d', String(duration)];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`autocannon exited ${code}: ${err}`)),
    );
  });
}

async function measure(url: string, variant: Variant): Promise<Measured> {
  await autocannon(url, variant.headers, 1); // warm-up
  const cpuBefore = process.cpuUsage();
  const result = await autocannon(url, variant.headers, DURATION_SECONDS);
  const cpu = process.cpuUsage(cpuBefore);
  const answered = result.statusCodeStats?.[String(variant.status)]?.count ?? 0;
  if (result.errors + result.timeouts > 0 || answered !== result.requests.total) {
    throw new Error(
      `${variant.label}: ${result.requests.total - answered} of ${result.requests.total} requests were not ${variant.status}`,
    );
  }
  return {
    perSecond: result.requests.average,
    cpuMicrosPerRequest: (cpu.user + cpu.system) / result.requests.total,
    bytesPerRequest: result.throughput.total / result.requests.total,
  };
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-compression-'));
  try {
    const parsed = parseConfig({
      PULSEBOARD_DATA_DIR: dir,
      PULSEBOARD_RATE_LIMIT: '100000000',
      PULSEBOARD_LOG_LEVEL: 'silent',
    });
    if (!parsed.ok) throw new Error(parsed.reason);
    const config = parsed.config;
    const stores = await openStores(config);
    const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
    for (const line of generateLines({
      projects: 500,
      seed: 7,
      calls: 50,
      days: 30,
      hotContractCalls: 0,
      followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER,
    })) {
      await ingestor.ingest(line, 'ndjson');
    }
    await stores.catchUp();
    const limiter = await createRateLimiter(config);
    const app = buildApp(createServices({ config, stores, limiter }));
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const { key } = await issueKey(stores, 'bench');
    const auth = { authorization: `Bearer ${key}` };
    const url = `${base}/v1/projects`;
    const first = await fetch(url, { headers: auth });
    const etag = first.headers.get('etag')!;
    const plainBytes = Buffer.byteLength(await first.text());

    const variants: Variant[] = [
      { label: 'off (identity)', headers: auth, status: 200 },
      { label: 'gzip', headers: { ...auth, 'accept-encoding': 'gzip' }, status: 200 },
      { label: 'br', headers: { ...auth, 'accept-encoding': 'br' }, status: 200 },
      { label: '304 (If-None-Match)', headers: { ...auth, 'if-none-match': etag }, status: 304 },
    ];
    process.stdout.write(
      `board page: ${plainBytes} bytes of JSON; ${CONNECTIONS} connections, ${DURATION_SECONDS} s per measurement after a 1 s warm-up, ${ROUNDS} rounds\n`,
    );
    const rounds: Measured[][] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const measured: Measured[] = [];
      for (const variant of variants) measured.push(await measure(url, variant));
      rounds.push(measured);
      process.stdout.write(
        `round ${round}: ${variants.map((v, i) => `${v.label} ${measured[i]!.perSecond.toFixed(0)} req/s ${measured[i]!.cpuMicrosPerRequest.toFixed(0)} µs CPU/req`).join(', ')}\n`,
      );
    }
    process.stdout.write('\nratios to the uncompressed board page in the same round (median of rounds):\n');
    for (const [i, variant] of variants.entries()) {
      if (i === 0) continue;
      const rate = median(rounds.map((r) => r[i]!.perSecond / r[0]!.perSecond));
      const cpu = median(rounds.map((r) => r[i]!.cpuMicrosPerRequest / r[0]!.cpuMicrosPerRequest));
      const bytes = median(rounds.map((r) => r[i]!.bytesPerRequest / r[0]!.bytesPerRequest));
      process.stdout.write(
        `  ${variant.label.padEnd(20)} req/s ${rate.toFixed(3)}   server CPU/req ${cpu.toFixed(3)}   bytes on the wire/req ${bytes.toFixed(3)}\n`,
      );
    }
    await app.close();
    await limiter.close();
    await stores.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
