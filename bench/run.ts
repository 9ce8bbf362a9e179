/**
 * Runs every benchmark in turn, each in a process of its own (none meets another's heap, caches or
 * files), given this command's arguments (`-- --scale`, `-- --only 10000`).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const benches = [
  'reads.bench.ts',
  'write-paths.bench.ts',
  'history.bench.ts',
  'mcp.bench.ts',
  'rate-limit.bench.ts',
  'live.bench.ts',
  'live-timers.bench.ts',
  'mirror.bench.ts',
  'postgres.bench.ts',
];
for (const name of benches) {
  process.stdout.write(`\n== ./${name}\n`);
  const args = [...process.execArgv, join(import.meta.dirname, name), ...process.argv.slice(2)];
  const run = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (run.status !== 0) {
    process.stderr.write(`${name} failed (exit ${run.status ?? run.signal})\n`);
    process.exit(1);
  }
}
