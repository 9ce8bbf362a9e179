/** Runs every benchmark in turn; each prints its figures and ratios to its own in-run baseline. */
const benches = [
  './reads.bench.ts',
  './read-paths.bench.ts',
  './write-paths.bench.ts',
  './mcp.bench.ts',
  './rate-limit.bench.ts',
  './kafka-batch.bench.ts',
  './live.bench.ts',
  './compression.bench.ts',
  './slow-clients.bench.ts',
];
for (const path of benches) {
  process.stdout.write(`\n== ${path}\n`);
  const module = (await import(path)) as { main: () => Promise<void> };
  await module.main();
}
