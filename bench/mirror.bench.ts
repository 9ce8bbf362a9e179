/**
 * The cost of `pulseboard mirror` (issue 44): the command mirroring a cached data set from a real
 * server into a fresh SQLite file and a fresh PostgreSQL schema, against inserting the same rows
 * directly into that store (the mirror's own upsert, one transaction per 1,000 rows), and against the
 * delta walk alone (the client paging through, storing nothing). Goal: mirror >= 0.3 of direct.
 * `node bench/mirror.bench.ts [--sizes 10000,100000]`; PostgreSQL at PULSEBOARD_BENCH_POSTGRES_URL
 * (default postgres://postgres@127.0.0.1:5432/test), left out with a line where none answers.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openPostgresMirror } from '../bin/mirror/postgres.ts';
import { openSqliteMirror } from '../bin/mirror/sqlite.ts';
import type { MirrorRow, MirrorStore } from '../bin/mirror/store.ts';
import { createClient } from '../client/index.ts';
import { dataSetSpec, ensureDataSet } from './dataset.ts';
import { benchKey } from './reads.bench.ts';
import { startServer } from './servers.ts';

const POSTGRES = process.env.PULSEBOARD_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CLI = join(import.meta.dirname, '../bin/pulseboard.ts');
const DIRECT_BATCH = 1000;
const GOAL = 0.3;

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const perSecond = (rows: number, ms: number) => `${Math.round(rows / (ms / 1000)).toLocaleString('en-US')} rows/s`;

async function timed(work: () => unknown): Promise<number> {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

/** The command itself, in a process of its own, as a user runs it. */
function mirrorCommand(url: string, key: string, to: string): void {
  const args = [CLI, 'mirror', '--url', url, '--key', key, '--to', to, '--once'];
  const child = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', ...args], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`mirror exited ${child.status}: ${child.stderr}`);
}

/** The same rows through the mirror's own upsert, 1,000 to a transaction. */
async function direct(store: MirrorStore, rows: MirrorRow[]): Promise<void> {
  let state = await store.state();
  for (let at = 0; at < rows.length; at += DIRECT_BATCH) {
    const committed = await store.commit(state, rows.slice(at, at + DIRECT_BATCH), `direct-${at}`, 'bench');
    if (!committed.ok) throw new Error(committed.reason);
    state = committed.state;
  }
}

async function postgresAnswers(): Promise<string | null> {
  const client = new pg.Client({ connectionString: POSTGRES, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A fresh schema for one measurement; the URL that puts the mirror's tables in it; how to drop it. */
async function scratch(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `pbbench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${name}`);
  return {
    url: `${POSTGRES}?options=${encodeURIComponent(`-c search_path=${name}`)}`,
    drop: async () => {
      await admin.query(`DROP SCHEMA ${name} CASCADE`);
      await admin.end();
    },
  };
}

async function measure(projects: number, postgresDown: string | null): Promise<void> {
  const dir = await ensureDataSet(dataSetSpec(projects));
  const key = await benchKey(dir);
  const server = await startServer(['app', dir]);
  const url = `http://127.0.0.1:${server.port}`;
  const work = mkdtempSync(join(tmpdir(), 'pulseboard-mirror-bench-'));
  try {
    let rows: MirrorRow[] = [];
    const walk = async () => {
      rows = [];
      for await (const step of createClient({ baseUrl: url, key }).projects.changes({
        since: '1970-01-01T00:00:00Z',
        limit: 100,
      })) {
        if (!step.ok) throw new Error(`walk failed: ${step.error.message}`);
        for (const project of step.page.projects) rows.push({ id: project.id, json: JSON.stringify(project) });
      }
    };
    // The first walk meets a server and page cache not yet warm: the measured walk is the second, as the mirrors that follow find them.
    await walk();
    const walkMs = await timed(walk);
    process.stdout.write(
      `mirror ${projects}: delta walk alone (client, 100 a page): ${seconds(walkMs)}, ${perSecond(rows.length, walkMs)}\n`,
    );

    const report = (store: string, mirrorMs: number, directMs: number) =>
      process.stdout.write(
        `mirror ${projects} into ${store}: ${seconds(mirrorMs)} (${perSecond(rows.length, mirrorMs)}); direct batched inserts ${seconds(directMs)} ` +
          `(${perSecond(rows.length, directMs)}); mirror/direct ${(directMs / mirrorMs).toFixed(3)} (goal >= ${GOAL}); ` +
          `mirror/walk alone ${(walkMs / mirrorMs).toFixed(3)}\n`,
      );

    const mirrorSqliteMs = await timed(() => mirrorCommand(url, key, `sqlite:${join(work, 'mirror.sqlite')}`));
    const sqliteStore = openSqliteMirror(join(work, 'direct.sqlite'));
    const directSqliteMs = await timed(() => direct(sqliteStore, rows));
    await sqliteStore.close();
    report('SQLite', mirrorSqliteMs, directSqliteMs);

    if (postgresDown !== null) {
      process.stdout.write(
        `mirror ${projects} into PostgreSQL: not measured, none answers at ${POSTGRES} (${postgresDown})\n`,
      );
      return;
    }
    const forMirror = await scratch();
    const forDirect = await scratch();
    try {
      const mirrorPostgresMs = await timed(() => mirrorCommand(url, key, forMirror.url));
      const postgresStore = await openPostgresMirror(forDirect.url);
      const directPostgresMs = await timed(() => direct(postgresStore, rows));
      await postgresStore.close();
      report('PostgreSQL', mirrorPostgresMs, directPostgresMs);
    } finally {
      await forMirror.drop();
      await forDirect.drop();
    }
  } finally {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

export async function main(): Promise<void> {
  const given = process.argv.indexOf('--sizes');
  const sizes = given > 0 ? process.argv[given + 1]!.split(',').map(Number) : [10_000, 100_000];
  const postgresDown = await postgresAnswers();
  for (const projects of sizes) await measure(projects, postgresDown);
}

if (import.meta.main) await main();
