/** Runs every benchmark in turn; each prints its figures and ratios to its own in-run baseline. */
const benches = ['./read-paths.bench.ts', './rate-limit.bench.ts', './reads.bench.ts'];
for (const path of benches) {
  process.stdout.write(`\n== ${path}\n`);
  const module = (await import(path)) as { main: () => Promise<void> };
  await module.main();
}
