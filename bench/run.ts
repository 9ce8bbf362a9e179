/**
 * Runs every benchmark in turn, each in a process of its own (none meets another's heap, caches or
 * files), given this command's arguments (`-- --scale`, `-- --only 10000`).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

// Every bench in name order, but the Kafka one (it needs java and mvn: run it alone).
const benches = readdirSync(import.meta.dirname)
  .filter((name) => name.endsWith('.bench.ts') && name !== 'kafka-ingest.bench.ts')
  .sort();
for (const name of benches) {
  process.stdout.write(`\n== ./${name}\n`);
  const args = [...process.execArgv, join(import.meta.dirname, name), ...process.argv.slice(2)];
  const run = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (run.status !== 0) {
    process.stderr.write(`${name} failed (exit ${run.status ?? run.signal})\n`);
    process.exit(1);
  }
}
