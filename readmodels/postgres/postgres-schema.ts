/**
 * Where the PostgreSQL read models live. Generation N's tables are in schema `pulseboard_g<N>`
 * (created by its first use, dropped whole by `remove(N)`); the pointer, the replay lock and who uses
 * which generation are in schema `pulseboard` (postgres-generations.ts). Collection names are values
 * of a `collection` column, never identifiers.
 *
 * Every column that is ordered or compared is COLLATE "C": byte order of UTF-8, which is code-point
 * order (what the other stores list in), and what makes a prefix a range of an index. No index is
 * declared DESC: a B-tree is walked backwards as cheaply as forwards.
 */
import type pg from 'pg';
import { quoteIdent } from './postgres-pool.ts';

export const SPACE_SCHEMA = 'pulseboard';
const GENERATION_SCHEMA = /^pulseboard_g(0|[1-9]\d{0,8})$/;

export function generationSchema(generation: number): string {
  if (!Number.isSafeInteger(generation) || generation < 0) throw new RangeError(`not a generation: ${generation}`);
  return `pulseboard_g${generation}`;
}

/** The generation a schema holds; null for any other schema. */
export function generationOfSchema(name: string): number | null {
  const match = GENERATION_SCHEMA.exec(name);
  return match ? Number(match[1]) : null;
}

/** The pattern `pg_namespace.nspname` is matched with to list generations. */
export const GENERATION_SCHEMA_PATTERN = '^pulseboard_g(0|[1-9][0-9]*)$';

/** Key of the transaction advisory lock every DDL of the space takes: concurrent CREATE … IF NOT EXISTS collide otherwise. */
export const DDL_LOCK = 0x70756c7365; // 'pulse'

/** The tables of one generation, in `schema`. */
export function generationTables(schema: string): string {
  const s = quoteIdent(schema);
  const text = 'text COLLATE "C" NOT NULL';
  return `
CREATE SCHEMA IF NOT EXISTS ${s};
-- Small columns first, the large texts last.
CREATE TABLE IF NOT EXISTS ${s}.docs (
  collection ${text},
  id ${text},
  seq bigint NOT NULL,
  written_at ${text},
  sort_key ${text},
  facet ${text},
  keys text NOT NULL,
  doc text NOT NULL,
  state text NOT NULL,
  PRIMARY KEY (collection, id)
);
CREATE INDEX IF NOT EXISTS docs_listing ON ${s}.docs (collection, sort_key, id);
CREATE INDEX IF NOT EXISTS docs_listing_facet ON ${s}.docs (collection, facet, sort_key, id);
CREATE INDEX IF NOT EXISTS docs_delta ON ${s}.docs (collection, seq, id);
CREATE INDEX IF NOT EXISTS docs_delta_facet ON ${s}.docs (collection, facet, seq, id);
CREATE INDEX IF NOT EXISTS docs_written ON ${s}.docs (collection, written_at, seq);
CREATE TABLE IF NOT EXISTS ${s}.doc_keys (
  collection ${text},
  key ${text},
  value ${text},
  id ${text},
  PRIMARY KEY (collection, key, value, id)
);
CREATE INDEX IF NOT EXISTS doc_keys_by_id ON ${s}.doc_keys (collection, id);
CREATE TABLE IF NOT EXISTS ${s}.doc_counts (
  collection ${text},
  facet ${text},
  n bigint NOT NULL,
  PRIMARY KEY (collection, facet)
);
CREATE TABLE IF NOT EXISTS ${s}.checkpoints (
  collection ${text} PRIMARY KEY,
  position bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS ${s}.list_chunks (
  collection ${text},
  start_key ${text},
  start_id ${text},
  total bigint NOT NULL,
  PRIMARY KEY (collection, start_key, start_id)
);
CREATE TABLE IF NOT EXISTS ${s}.list_chunk_facets (
  collection ${text},
  start_key ${text},
  start_id ${text},
  facet ${text},
  n bigint NOT NULL,
  PRIMARY KEY (collection, start_key, start_id, facet)
);`;
}

/** The tables `clear` empties (the history's are emptied by the history module). */
export const GENERATION_TABLES = ['docs', 'doc_keys', 'doc_counts', 'checkpoints', 'list_chunks', 'list_chunk_facets'];

/** The space-wide tables, in schema `pulseboard`. */
export const SPACE_TABLES = `
CREATE SCHEMA IF NOT EXISTS ${SPACE_SCHEMA};
-- The live generation: one row, replaced by a compare-and-set; stamp changes at every switch.
CREATE TABLE IF NOT EXISTS ${SPACE_SCHEMA}.pointer (
  id integer PRIMARY KEY CHECK (id = 1),
  generation integer NOT NULL,
  stamp bigint NOT NULL
);
INSERT INTO ${SPACE_SCHEMA}.pointer (id, generation, stamp) VALUES (1, 0, 0) ON CONFLICT DO NOTHING;
-- The replay lock: a lease, and its fencing token, bumped at every acquire and kept after release.
CREATE TABLE IF NOT EXISTS ${SPACE_SCHEMA}.replay_lock (
  id integer PRIMARY KEY CHECK (id = 1),
  token bigint NOT NULL,
  holder text,
  host text,
  pid integer,
  expires_at bigint
);
INSERT INTO ${SPACE_SCHEMA}.replay_lock (id, token) VALUES (1, 0) ON CONFLICT DO NOTHING;`;

/** Runs `ddl` in a transaction holding the space's DDL lock. */
export async function runDdl(client: pg.ClientBase, ddl: string, after?: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  await client.query(`SELECT pg_advisory_xact_lock(${DDL_LOCK})`);
  await client.query(ddl);
  await after?.();
  await client.query('COMMIT');
}
