import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The PostgreSQL the machines run (127.0.0.1:5432, trust auth, database `test`). Each test run works
 * in a schema of its own, dropped afterwards. Where none answers the tests skip with the reason,
 * unless PULSEBOARD_REQUIRE_SERVERS=1 (CI), where they run and fail.
 */
export const POSTGRES_URL = process.env['PULSEBOARD_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export async function postgresSkipReason(): Promise<false | string> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return false;
  } catch (error) {
    if (process.env['PULSEBOARD_REQUIRE_SERVERS'] === '1') return false;
    return `needs PostgreSQL at ${POSTGRES_URL} (${error instanceof Error ? error.message : String(error)})`;
  } finally {
    await client.end().catch(() => {});
  }
}

export type ScratchSchema = {
  name: string;
  /** A connection URL whose search_path is the schema. */
  url: string;
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
  drop(): Promise<void>;
};

export async function scratchSchema(prefix: string): Promise<ScratchSchema> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${name}`);
  await client.query(`SET search_path TO ${name}`);
  return {
    name,
    url: `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${name}`)}`,
    async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) {
      return (await client.query<R>(sql, params)).rows;
    },
    async drop() {
      await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`).catch(() => {});
      await client.end().catch(() => {});
    },
  };
}

export type ScratchDatabase = {
  name: string;
  /** A connection URL to the database. */
  url: string;
  drop(): Promise<void>;
};

/**
 * A database of its own for one test run (the PostgreSQL adapters' contract suites), dropped afterwards
 * with every connection still open on it.
 */
export async function scratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`.toLowerCase();
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    // Nothing recovers a scratch database after a server crash: its commits need not wait for the WAL
    // flush (visibility is unchanged; every commit of a test costs a disk flush less).
    await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
  } finally {
    await admin.end().catch(() => {});
  }
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end().catch(() => {});
      }
    },
  };
}

/** Databases a harness of this process has given back, emptied, for the next one (reusedDatabase). */
const emptied: ScratchDatabase[] = [];

/**
 * A database of its own for one harness (the acceptance suites on PostgreSQL): one this process emptied
 * earlier, else a new one. Giving it back ends every connection still on it and drops every schema in
 * it (the adapters create theirs on open), at a tenth of the cost of CREATE and DROP DATABASE; the
 * `postgres` project's setup file drops what is left after each test file (dropReusedDatabases).
 */
export async function reusedDatabase(prefix: string): Promise<ScratchDatabase> {
  const database = emptied.pop() ?? (await scratchDatabase(prefix));
  return {
    name: database.name,
    url: database.url,
    async drop() {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        await client.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        );
        const { rows } = await client.query<{ name: string }>(
          `SELECT nspname AS name FROM pg_namespace
             WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'`,
        );
        await client.query(`${rows.map((row) => `DROP SCHEMA "${row.name}" CASCADE;`).join(' ')} CREATE SCHEMA public`);
      } catch (error) {
        // A database that cannot be emptied is not given out again.
        await client.end().catch(() => {});
        await database.drop();
        throw error;
      }
      await client.end().catch(() => {});
      emptied.push(database);
    },
  };
}

/** Drops the databases this process emptied for reuse (after each test file of the `postgres` project). */
export async function dropReusedDatabases(): Promise<void> {
  for (const database of emptied.splice(0)) await database.drop();
}
