/**
 * The fault tests (test/faults/): whole deployments of processes with servers of their own (a
 * PostgreSQL primary and replica, Kafka, Redis), killed and cut off. Too long for `npm test`:
 * `npm run test:faults`, a step of its own in .ci/run. One file at a time: each loads both cores.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'faults',
    include: ['test/faults/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 1,
    isolate: true,
    execArgv: ['--disable-warning=ExperimentalWarning'],
    testTimeout: 1_800_000,
    hookTimeout: 300_000,
    // The fault test prints its table of faults.
    silent: false,
    reporters: ['./test/support/skip-reasons-reporter.ts', 'default'],
  },
});
