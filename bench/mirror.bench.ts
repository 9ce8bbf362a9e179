/**
 * `pulseboard mirror --once` of a cached data set from a real server into SQLite and PostgreSQL (as the
 * tests find it; left out with a line when none answers), against the mirror's own upsert of the same
 * rows, 1,000 a transaction (goal: at least 0.3), and against the delta walk alone. `--only N`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresMirror } from '../bin/mirror/postgres.ts';
import { openSqliteMirror } from '../bin/mirror/sqlite.ts';
import type { MirrorRow, MirrorStore } from '../bin/mirror/store.ts';
import { createClient } from '../client/index.ts';
import { postgresSkipReason, scratchSchema } from '../test/support/postgres.ts';
import { benchKey, benchSizes, dataSetSpec, ensureDataSet } from './dataset.ts';
import { timed } from './median.ts';
import { startServer } from './servers.ts';

const CLI = join(import.meta.dirname, '../bin/pulseboard.ts');
const DIRECT_BATCH = 1000;
const GOAL = 0.3;

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const perSecond = (rows: number, ms: number) => `${Math.round(rows / (ms / 1000)).toLocaleString('en-US')} rows/s`;

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

async function measure(projects: number, postgresDown: string | false): Promise<void> {
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
    const walkMs = (await timed(walk)).ms;
    console.log(
      `mirror ${projects}: delta walk alone (client, 100 a page): ${seconds(walkMs)}, ${perSecond(rows.length, walkMs)}`,
    );

    const compare = async (name: string, to: string, open: () => MirrorStore | Promise<MirrorStore>) => {
      const mirrorMs = (await timed(() => mirrorCommand(url, key, to))).ms;
      const store = await open();
      const directMs = (await timed(() => direct(store, rows))).ms;
      await store.close();
      process.stdout.write(
        `mirror ${projects} into ${name}: ${seconds(mirrorMs)} (${perSecond(rows.length, mirrorMs)}); direct batched inserts ${seconds(directMs)} ` +
          `(${perSecond(rows.length, directMs)}); mirror/direct ${(directMs / mirrorMs).toFixed(3)} (goal >= ${GOAL}); ` +
          `mirror/walk alone ${(walkMs / mirrorMs).toFixed(3)}\n`,
      );
    };
    await compare('SQLite', `sqlite:${join(work, 'mirror.sqlite')}`, () =>
      openSqliteMirror(join(work, 'direct.sqlite')),
    );
    if (postgresDown !== false) {
      console.log(`mirror ${projects} into PostgreSQL: not measured, ${postgresDown}`);
      return;
    }
    const [forMirror, forDirect] = [await scratchSchema('pbbench'), await scratchSchema('pbbench')];
    try {
      await compare('PostgreSQL', forMirror.url, () => openPostgresMirror(forDirect.url));
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
  const postgresDown = await postgresSkipReason();
  for (const projects of benchSizes([10_000, 100_000])) await measure(projects, postgresDown);
}

if (import.meta.main) await main();
