/**
 * Setup file of vitest.config.ts's `postgres` project: after each test file, the databases its
 * harnesses gave back for reuse are dropped (test/support/postgres.ts, reusedDatabase).
 */
import { afterAll } from 'vitest';
import { dropReusedDatabases } from './postgres.ts';

afterAll(() => dropReusedDatabases());
