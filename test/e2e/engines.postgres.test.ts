/**
 * The PostgreSQL deployment answers exactly as the embedded default: the sample is ingested into
 * PostgreSQL, its log is copied row for row (positions, recordedAt, archive id) into an embedded
 * data directory, and `serve` on each engine must give the same bytes, `readAt` aside, for the board,
 * the delta walk, one project, search, calls, pulse, as-of reads, diffs and the Parquet export; also
 * after `pulseboard replay` on PostgreSQL while it serves.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { runCli, startServe, stopChild } from '../support/cli.ts';
import { copyLog } from '../support/copy-log.ts';
import { startReplay, stopReplay } from '../replay/support.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';

const skip = await postgresSkipReason();
const SAMPLE = join(import.meta.dirname, '../../sample/sample.ndjson');

type Engine = { name: string; env: Record<string, string>; child?: ChildProcess; url: string };

/** A body with its `readAt` taken out: the one member that differs between two reads. */
const withoutReadAt = (body: string): string => body.replaceAll(/"readAt":"[^"]*",?/g, '');

async function cli(env: Record<string, string>, args: string[], stdin?: string): Promise<string> {
  const run = await runCli(args, { env, ...(stdin === undefined ? {} : { stdin }) });
  assert.equal(run.code, 0, `pulseboard ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

describe('serve on PostgreSQL answers as the embedded default', { ...skipFor(skip), timeout: 300_000 }, () => {
  let database: ScratchDatabase;
  let embeddedDir: string;
  let work: string;
  let key = '';
  let middle = '';
  const engines: Engine[] = [];

  /** The reads most likely to show a partial or doubled fold: every board page, the whole delta, a diff. */
  async function sameBoard(): Promise<void> {
    const first = JSON.parse(await same('/v1/projects', 200)) as { totalPages: number };
    for (let page = 2; page <= first.totalPages; page++) await same(`/v1/projects?page=${page}`, 200);
    for (let path = '/v1/projects?since=1970-01-01T00:00:00Z&limit=100'; ;) {
      const body = JSON.parse(await same(path, 200)) as { projects: unknown[]; cursor: string };
      if (body.projects.length === 0) break;
      path = `/v1/projects?cursor=${body.cursor}&limit=100`;
    }
    await same(`/v1/projects/diff?from=${encodeURIComponent(middle)}&limit=100`, 200);
    await same('/v1/calltracker/calls', 200);
    await same('/v1/pulse', 200);
  }

  async function get(engine: Engine, path: string): Promise<{ status: number; body: string; link: string | null }> {
    const res = await fetch(`${engine.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: await res.text(), link: res.headers.get('link') };
  }

  /** Reads `path` on both engines: the same status and bytes; returns the body. */
  async function same(path: string, status?: number): Promise<string> {
    const [postgres, embedded] = await Promise.all(engines.map((engine) => get(engine, path)));
    assert.equal(postgres!.status, embedded!.status, path);
    if (status !== undefined) assert.equal(embedded!.status, status, `${path}: ${embedded!.body.slice(0, 200)}`);
    const [a, b] = [withoutReadAt(postgres!.body), withoutReadAt(embedded!.body)];
    if (a !== b) {
      let at = 0;
      while (a[at] === b[at]) at++;
      const around = (text: string) => text.slice(Math.max(0, at - 150), at + 150);
      assert.fail(`${path}: differs at ${at}\npostgres: …${around(a)}…\nembedded: …${around(b)}…`);
    }
    assert.equal(postgres!.link, embedded!.link, `${path}: Link`);
    return embedded!.body;
  }

  async function caughtUp(engine: Engine): Promise<void> {
    for (let attempt = 0; attempt < 600; attempt++) {
      const res = await fetch(`${engine.url}/readyz`).catch(() => null);
      if (res?.status === 200) {
        const body = (await res.json()) as { lag?: Record<string, number | null> };
        if (Object.values(body.lag ?? {}).every((lag) => lag === 0)) return;
      }
      await sleep(100);
    }
    assert.fail(`${engine.name} did not catch up`);
  }

  beforeAll(async () => {
    database = await scratchDatabase('pb_engines');
    work = mkdtempSync(join(tmpdir(), 'pulseboard-engines-'));
    embeddedDir = join(work, 'embedded');
    const budget = { PULSEBOARD_RATE_LIMIT: '1000000' };
    const postgresEnv = { POSTGRES_URL: database.url, PULSEBOARD_DATA_DIR: join(work, 'unused'), ...budget };
    // Two ingests, so that a point between them has a board of its own.
    const lines = readFileSync(SAMPLE, 'utf8').trimEnd().split('\n');
    const half = Math.floor(lines.length / 2);
    writeFileSync(join(work, 'first.ndjson'), `${lines.slice(0, half).join('\n')}\n`);
    writeFileSync(join(work, 'second.ndjson'), `${lines.slice(half).join('\n')}\n`);
    await cli(postgresEnv, ['ingest', join(work, 'first.ndjson')]);
    await sleep(20);
    middle = new Date().toISOString();
    await sleep(20);
    await cli(postgresEnv, ['ingest', join(work, 'second.ndjson')]);
    // The local owner: an embedded first start issues it a key unless it has one, which would add events.
    await cli(postgresEnv, ['owners', 'allow', 'local']);
    await cli(postgresEnv, ['owners', 'link', 'local']);
    key = (await cli(postgresEnv, ['keys', 'issue', '--owner', 'local'])).trim();
    await copyLog(database.url, embeddedDir);

    for (const [name, env] of [
      ['postgres', postgresEnv],
      ['embedded', { PULSEBOARD_DATA_DIR: embeddedDir, ...budget }],
    ] as const) {
      const served = await startServe(env);
      engines.push({ name, env, child: served.child, url: served.url });
    }
    await Promise.all(engines.map(caughtUp));
  });

  afterAll(async () => {
    for (const engine of engines) if (engine.child) await stopChild(engine.child, 'SIGTERM');
    await database?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the board by page, as of now and as of a point between the two ingests', async () => {
    const first = JSON.parse(await same('/v1/projects')) as { totalPages: number };
    assert.ok(first.totalPages > 1);
    for (let page = 2; page <= first.totalPages; page++) await same(`/v1/projects?page=${page}`);
    await same('/v1/projects?has_dossier=true');
    const then = JSON.parse(await same(`/v1/projects?asOf=${encodeURIComponent(middle)}`)) as {
      total: number;
      asOf: { cursor: string };
    };
    assert.ok(then.total > 0 && then.total < (JSON.parse(await same('/v1/projects')) as { total: number }).total);
    await same(`/v1/projects?page=2&asOf=${then.asOf.cursor}`);
  });

  it('the delta walk from the beginning, page by page to the head', async () => {
    let cursor = '';
    let rows = 0;
    for (let page = 0; page < 1_000; page++) {
      const path = cursor ? `/v1/projects?cursor=${cursor}` : '/v1/projects?since=1970-01-01T00:00:00Z';
      const body = JSON.parse(await same(path)) as { projects: unknown[]; cursor: string };
      rows += body.projects.length;
      if (body.projects.length === 0) break;
      cursor = body.cursor;
    }
    assert.ok(rows >= 300, `walked ${rows} rows`);
  });

  it('one project (live, with context, as of a point), search, calls, pulse and the diff', async () => {
    const board = JSON.parse(await same('/v1/projects?page=1')) as {
      projects: { id: string; handle: string | null }[];
    };
    for (const project of board.projects.slice(0, 12)) {
      const name = encodeURIComponent(project.handle ?? project.id);
      await same(`/v1/projects/${name}`, 200);
      await same(`/v1/projects/${name}?include=context`, 200);
      await same(`/v1/projects/${name}?asOf=${encodeURIComponent(middle)}`);
      await same(`/v1/search?q=${encodeURIComponent(project.id)}`, 200);
      await same(`/v1/search?q=${name}`, 200);
    }
    let path: string | null = '/v1/calltracker/calls';
    let calls = 0;
    for (let pages = 0; path !== null && pages < 100; pages++) {
      const page = JSON.parse(await same(path, 200)) as { calls: { id: string }[]; next: string | null };
      for (const call of page.calls.slice(0, 3))
        await same(`/v1/calltracker/calls/${encodeURIComponent(call.id)}`, 200);
      calls += page.calls.length;
      path = page.next === null ? null : `/v1/calltracker/calls?cursor=${page.next}`;
    }
    assert.ok(calls > 0);
    const pulse = JSON.parse(await same('/v1/pulse', 200)) as { beats: { id: string }[] };
    for (const beat of pulse.beats) await same(`/v1/pulse/${beat.id}`, 200);
    await same(`/v1/projects/diff?from=${encodeURIComponent(middle)}&limit=50`);
  });

  it('the Parquet export as of a point: the same files, byte for byte', async () => {
    const files: Record<string, Buffer>[] = [];
    for (const engine of engines) {
      const out = join(work, `export-${engine.name}`);
      await cli(engine.env, ['export', '--format', 'parquet', '--as-of', middle, '--out', out]);
      files.push(Object.fromEntries(readdirSync(out).map((name) => [name, readFileSync(join(out, name))])));
    }
    assert.deepEqual(Object.keys(files[0]!).sort(), Object.keys(files[1]!).sort());
    assert.ok(Object.keys(files[0]!).length > 0);
    for (const name of Object.keys(files[0]!)) assert.ok(files[0]![name]!.equals(files[1]![name]!), name);
  });

  it('replay on PostgreSQL builds a new generation while serving, switches, and answers the same', async () => {
    const postgres = engines[0]!;
    const replay = await runCli(['replay'], { env: postgres.env });
    assert.equal(replay.code, 0, replay.stderr);
    await caughtUp(postgres);
    // The serving process follows the switch by itself: reads equal the embedded ones again.
    for (let attempt = 0; attempt < 100; attempt++) {
      const res = await get(postgres, '/v1/projects?page=2');
      if (res.status === 200) break;
      await sleep(100);
    }
    await same('/v1/projects?page=2');
    await same(`/v1/projects?asOf=${encodeURIComponent(middle)}`);
    await same(`/v1/projects/diff?from=${encodeURIComponent(middle)}&limit=50`);
  });

  it('a replay SIGKILLed midway changes nothing served; the next replay finishes and answers the same', async () => {
    const postgres = engines[0]!;
    const killed = startReplay('', {
      batchSize: 500,
      env: postgres.env,
      onProgress: (line, child) => {
        if (line === 3) child.kill('SIGKILL');
      },
    });
    try {
      const run = await killed.exited;
      assert.equal(run.signal, 'SIGKILL', `the replay ended before it was killed: ${run.stderr}`);
    } finally {
      await stopReplay(killed);
    }
    await sameBoard();
    const again = await runCli(['replay'], { env: postgres.env });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /left by an interrupted replay/);
    await caughtUp(postgres);
    await sameBoard();
  });

  it('serve SIGKILLed during its catch-up resumes from what it committed and answers the same', async () => {
    const postgres = engines[0]!;
    await stopChild(postgres.child!, 'SIGTERM');
    // The read models from nothing: every generation and the space's own tables dropped.
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const schemas = await client.query<{ nspname: string }>(
        `SELECT nspname FROM pg_namespace WHERE nspname = 'pulseboard' OR nspname ~ '^pulseboard_g[0-9]+$'`,
      );
      assert.ok(schemas.rowCount! > 0);
      for (const { nspname } of schemas.rows) await client.query(`DROP SCHEMA "${nspname}" CASCADE`);
    } finally {
      await client.end();
    }
    let served = await startServe(postgres.env);
    let sawLag = false;
    for (let attempt = 0; attempt < 600 && !sawLag; attempt++) {
      const ready = (await (await fetch(`${served.url}/readyz`)).json()) as { lag: Record<string, number | null> };
      sawLag = (ready.lag['projects'] ?? 0) > 0;
      if (!sawLag) await sleep(20);
    }
    assert.ok(sawLag, 'serve was catching up');
    await stopChild(served.child, 'SIGKILL');
    served = await startServe(postgres.env);
    postgres.child = served.child;
    postgres.url = served.url;
    await caughtUp(postgres);
    await sameBoard();
  });
});
