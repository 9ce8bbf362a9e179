/**
 * The test suite on vitest (docs/decisions.md "The first hour, tests and benches").
 * `npm test` runs it once and fails on a failing test; with CI set (`.ci/run`, GitHub) it also
 * measures coverage and fails on a drop below the floor;
 * `npm run coverage` (--mode coverage) prints the per-folder table and the files under 60 %;
 * `npm run test:watch` for development.
 */
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The suites that read through the service on either engine, run again on PostgreSQL, every file of
 * them: the same acceptance behaviour on both (issue 59).
 */
const POSTGRES_SUITES = [
  'test/api/**/*.test.ts',
  'test/calls/**/*.test.ts',
  'test/search/**/*.test.ts',
  'test/pulse/**/*.test.ts',
  'test/asks/**/*.test.ts',
  'test/live/**/*.test.ts',
  'test/history/history-api.test.ts',
  'test/history/change-stream.test.ts',
  'test/replay/as-of.test.ts',
];

export default defineConfig(({ mode }) => {
  const table = mode === 'coverage';
  return {
    test: {
      // Each test file in a child process of its own, as under `node --test`: the tests open SQLite
      // files, start servers and worker threads, fake Date and spy on console. Two at a time (2 cores).
      pool: 'forks',
      maxWorkers: 2,
      isolate: true,
      execArgv: ['--disable-warning=ExperimentalWarning'],
      // The acceptance suites run twice: on the embedded default, and on PostgreSQL (the harness then
      // gives each test a database of its own, test/support/harness.ts).
      projects: [
        // test/faults/ runs as a step of its own (vitest.faults.config.ts, `npm run test:faults`).
        {
          extends: true,
          test: {
            name: 'embedded',
            include: ['test/**/*.test.ts'],
            exclude: [...configDefaults.exclude, 'test/faults/**'],
          },
        },
        {
          extends: true,
          test: {
            name: 'postgres',
            include: POSTGRES_SUITES,
            env: { PULSEBOARD_TEST_ENGINE: 'postgres' },
            setupFiles: ['./test/support/postgres-engine-setup.ts'],
          },
        },
      ],
      testTimeout: 300_000,
      hookTimeout: 300_000,
      // A test's console output (request logs, progress lines) is shown only when it fails.
      silent: 'passed-only',
      slowTestThreshold: 10_000,
      reporters: [
        './test/support/skip-reasons-reporter.ts',
        ...(table ? ['./test/support/low-coverage-reporter.ts'] : []),
        'default',
      ],
      coverage: {
        // Measured where CI is set and by `npm run coverage`: V8's precise coverage makes the run about
        // 1.5x as long, so a developer's `npm test` leaves it out (docs/decisions.md).
        enabled: table || Boolean(process.env.CI),
        provider: 'v8',
        include: [
          'api/**/*.ts',
          'bin/**/*.ts',
          'client/**/*.ts',
          'config/**/*.ts',
          'events/**/*.ts',
          'eventstore/**/*.ts',
          'ingest/**/*.ts',
          'mcp/**/*.ts',
          'projectors/**/*.ts',
          'readmodels/**/*.ts',
          'service/**/*.ts',
        ],
        // The CLI, the server and the projector worker threads run in processes the tests spawn.
        autoAttachSubprocess: true,
        // npm test prints nothing after vitest's summary unless the floor is missed.
        reporter: table ? [['text', { maxCols: 160 }], 'json-summary'] : ['json-summary'],
        watermarks: { lines: [60, 80], branches: [60, 80] },
        thresholds: { lines: 93, branches: 85 },
      },
    },
  };
});
