/**
 * Skipping with a reason under vitest. Its `skip` option takes only a boolean; node:test took a
 * reason (`{ skip: 'needs a Docker engine for MongoDB …' }`). `skipFor(reason)` gives the options
 * that skip the suite or test at collection (no hook runs, as before) and keep the reason in the
 * task meta, which test/support/skip-reasons-reporter.ts prints at the end of the run.
 */
import type { TestOptions } from 'vitest';

declare module 'vitest' {
  interface TaskMeta {
    /** Why the test was declared skipped (an honest skip names what could not run). */
    skipReason?: string;
  }
}

/** false: run; a reason: skip, and say why. */
export function skipFor(reason: false | string): TestOptions {
  return reason === false ? {} : { skip: true, meta: { skipReason: reason } };
}
