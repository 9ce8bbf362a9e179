/**
 * Runs every benchmark in turn, each in a process of its own (so none meets the heap, caches or open
 * files another left behind) given this command's arguments (`-- --scale`); each prints its figures and
 * ratios to its own in-run baseline.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const benches = [
  'reads.bench.ts',
  'write-paths.bench.ts',
  'mcp.bench.ts',
  'rate-limit.bench.ts',
  'live.bench.ts',
  'live-timers.bench.ts',
  'mirror.bench.ts',
  'postgres.bench.ts',
];
for (const name of benches) {
  process.stdout.write(`\n== ./${name}\n`);
  const run = spawnSync(
    process.execPath,
    [...process.execArgv, join(import.meta.dirname, name), ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  if (run.status !== 0) {
    process.stderr.write(`${name} failed (exit ${run.status ?? run.signal})\n`);
    process.exit(1);
  }
}
