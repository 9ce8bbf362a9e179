/**
 * The PostgreSQL mirror survives its data and its database (issue 57, item 3): a project whose JSON
 * holds `\u0000` (which jsonb refuses) is stored as served; a backend terminated mid-walk is
 * reconnected and the walk resumed, nothing doubled; a table an older version made is brought up to
 * date and rewritten with the served text.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { openPostgresMirror } from '../../bin/mirror/postgres.ts';
import { runCli, startServe, stopChild, type ServeProcess } from '../support/cli.ts';
import { POSTGRES_URL, postgresSkipReason, scratchSchema, type ScratchSchema } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';
import { checkAgainst, firstDifference, freshWalk, postgresSnapshot, startMirror } from './support.ts';

const pgSkip = await postgresSkipReason();
const SAMPLE = join(import.meta.dirname, '../../sample/sample.ndjson');
const NUL_PROJECT = 'p-nul';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('pulseboard mirror into PostgreSQL: its data and its database', skipFor(pgSkip), () => {
  let dir: string;
  let serve: ServeProcess;
  let url: string;
  let truth: Map<string, string>;
  const schemas: ScratchSchema[] = [];

  const schema = async () => {
    const s = await scratchSchema('pbmirrorpg');
    schemas.push(s);
    return s;
  };
  const mirrorOnce = async (to: string) => {
    const mirror = startMirror(['--url', url, '--key', serve.key, '--to', to, '--once', '--limit', '10']);
    const code = await mirror.exited;
    return { code, stderr: mirror.stderr() };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-mirror-pg-'));
    const nul = join(dir, 'nul.ndjson');
    const sighted = {
      type: 'project.sighted',
      id: 'sight-nul',
      at: '2026-11-20T08:00:00Z',
      data: {
        projectId: NUL_PROJECT,
        handle: '@NulLabs',
        identity: { kind: 'x', handle: 'NulLabs', website: null, chain: null, contract: null },
        name: 'Nul\u0000Labs',
        pfp: null,
        fol: 1200,
        why: 'A name with a NUL in it',
        bio: null,
      },
    };
    writeFileSync(nul, `${JSON.stringify(sighted)}\n`);
    const ingested = await runCli(['ingest', SAMPLE, nul], { env: { PULSEBOARD_DATA_DIR: dir } });
    assert.equal(ingested.code, 0, ingested.stderr);
    serve = await startServe({ PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '100000' }, { key: true });
    url = serve.url.replace(/\/+$/, '');
    // The server catches its read models up in the background: wait until the board holds every project.
    for (let attempt = 0; ; attempt++) {
      truth = await freshWalk(url, serve.key);
      if (truth.size === 301) break;
      assert.ok(attempt < 300, `the server never caught up (${truth.size} projects)`);
      await sleep(100);
    }
  }, 120_000);

  afterAll(async () => {
    if (serve) await stopChild(serve.child, 'SIGKILL');
    for (const s of schemas) await s.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores a project whose JSON holds \\u0000 exactly as served, its jsonb NULL, every other row with its jsonb', async () => {
    const s = await schema();
    const run = await mirrorOnce(s.url);
    assert.equal(run.code, 0, run.stderr);
    const snapshot = await postgresSnapshot(s);
    assert.equal(firstDifference(snapshot, truth), null);
    assert.ok(snapshot.rows.get(NUL_PROJECT)!.json.includes('"name":"Nul\\u0000Labs"'));
    const [nul] = await s.query<{ project: unknown }>('SELECT project FROM pulseboard_mirror WHERE id = $1', [
      NUL_PROJECT,
    ]);
    assert.equal(nul!.project, null);
    const [others] = await s.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pulseboard_mirror WHERE project->>'id' = id AND project = project_json::jsonb`,
    );
    assert.equal(others!.n, truth.size - 1);
  });

  it('reconnects when its backend is terminated mid-walk and resumes from the stored cursor, nothing doubled', async () => {
    const s = await schema();
    // The tables first, then the cursor row held, so the mirror's first commit waits with a page in hand.
    await (await openPostgresMirror(s.url)).close();
    const locker = new pg.Client({ connectionString: s.url });
    await locker.connect();
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT * FROM pulseboard_mirror_cursor FOR UPDATE');
      const name = `mirror-${s.name}`;
      const mirror = startMirror([
        ...['--url', url, '--key', serve.key, '--once', '--limit', '10'],
        ...['--to', `${s.url}&application_name=${name}`],
      ]);
      let pid: number | null = null;
      for (let attempt = 0; pid === null; attempt++) {
        assert.ok(attempt < 600, `the mirror's commit never waited for the cursor row: ${mirror.stderr()}`);
        const [waiting] = await admin
          .query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
            [name],
          )
          .then((r) => r.rows);
        pid = waiting?.pid ?? null;
        if (pid === null) await sleep(50);
      }
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await locker.query('ROLLBACK');
      assert.equal(await mirror.exited, 0, mirror.stderr());
      assert.match(mirror.stderr(), /connection was lost .*reconnecting/);
    } finally {
      await locker.end().catch(() => {});
      await admin.end().catch(() => {});
    }
    const snapshot = await postgresSnapshot(s);
    assert.equal(firstDifference(snapshot, truth), null);
    assert.equal(checkAgainst(null, snapshot), null);
    // One walk of a board nobody writes to: each project written once, no page committed twice.
    assert.equal(snapshot.cursorSeq, truth.size);
  });

  it('a connection terminated between commits is reconnected on the next one, which lands once', async () => {
    const s = await schema();
    const name = `store-${s.name}`;
    const lost: string[] = [];
    const store = await openPostgresMirror(`${s.url}&application_name=${name}`, {
      onLost: (reason) => lost.push(reason),
      backoff: { baseMs: 10, capMs: 100 },
    });
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      const first = await store.commit({ cursor: null, seq: 0 }, [{ id: 'a', json: '{"id":"a"}' }], 'c1', url);
      assert.ok(first.ok);
      const killed = await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [name],
      );
      assert.equal(killed.rowCount, 1);
      const rows = [{ id: 'b', json: '{"id":"b","name":"B\\u0000"}' }];
      const second = await store.commit(first.state, rows, 'c2', url);
      assert.deepEqual(second, { ok: true, state: { cursor: 'c2', seq: 2 } });
      assert.equal(lost.length, 1, 'the loss was told once');
      assert.deepEqual(await store.state(), { cursor: 'c2', seq: 2 });
      const stored = await s.query<{ id: string; project_json: string; seq: string }>(
        'SELECT id, project_json, seq FROM pulseboard_mirror ORDER BY id',
      );
      assert.deepEqual(
        stored.map((r) => [r.id, r.project_json, Number(r.seq)]),
        [
          ['a', '{"id":"a"}', 1],
          ['b', rows[0]!.json, 2],
        ],
      );
    } finally {
      await admin.end().catch(() => {});
      await store.close().catch(() => {});
    }
  });

  it('brings an older version’s jsonb table up to date and rewrites every row with the served text', async () => {
    const s = await schema();
    await s.query(`CREATE TABLE pulseboard_mirror (
      id text PRIMARY KEY, project jsonb NOT NULL, written_at timestamptz NOT NULL, seq bigint NOT NULL)`);
    await s.query(`CREATE TABLE pulseboard_mirror_cursor (
      one smallint PRIMARY KEY CHECK (one = 1), cursor text, seq bigint NOT NULL, source text, updated_at timestamptz)`);
    const old = [...truth].filter(([id]) => id !== NUL_PROJECT).slice(0, 50);
    await s.query(
      `INSERT INTO pulseboard_mirror SELECT id, project::jsonb, now(), seq
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t (id, project, seq)`,
      [old.map(([id]) => id), old.map(([, json]) => json)],
    );
    await s.query(`INSERT INTO pulseboard_mirror_cursor VALUES (1, 'some-old-cursor', 50, $1, now())`, [url]);
    const run = await mirrorOnce(s.url);
    assert.equal(run.code, 0, run.stderr);
    const snapshot = await postgresSnapshot(s);
    assert.equal(firstDifference(snapshot, truth), null);
    assert.equal(checkAgainst(null, snapshot), null);
    assert.equal(snapshot.cursorSeq, 50 + truth.size, 'every row rewritten, seq growing on from the old one');
  });
});
