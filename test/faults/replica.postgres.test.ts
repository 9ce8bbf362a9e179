/**
 * Replica reads (POSTGRES_REPLICA_URL): a primary and a streaming replica of the test's own
 * (test/support/postgres-pair.ts), one projector process and two API processes, A reading the replica
 * and B the primary only. A reads the replica; a consumer whose cursor is ahead of a replica that
 * stopped replaying gets, on A, exactly the rows B would give (none skipped, none twice); a killed
 * replica leaves A serving everything from the primary.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { runCli, startServe, stopChild } from '../support/cli.ts';
import { createPostgresPair, pairSkipReason, type PostgresPair } from '../support/postgres-pair.ts';
import { skipFor } from '../support/skip.ts';

const skip = pairSkipReason();
const SAMPLE = join(import.meta.dirname, '../../sample/sample.ndjson');

type Page = { projects: { id: string }[]; cursor: string };

describe('API reads from a PostgreSQL streaming replica', { ...skipFor(skip), timeout: 300_000 }, () => {
  let pair: PostgresPair;
  let work: string;
  let key = '';
  const children: ChildProcess[] = [];
  let replicaApi = '';
  let primaryApi = '';
  let projectorsUrl = '';

  const get = async (base: string, path: string) => {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const body = await res.text();
    assert.ok(res.status < 500, `${path}: ${res.status} ${body.slice(0, 200)}`);
    return { status: res.status, body };
  };
  const total = async (base: string) => (JSON.parse((await get(base, '/v1/projects')).body) as { total: number }).total;
  /** The delta cursor's (seq, id): cursors are base64url JSON (service/projects.ts). */
  const cursorSeq = (cursor: string) => (JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { s: number }).s;

  /** One delta page: the ids of its rows and the cursor after it. */
  async function page(base: string, cursor: string | null, limit = 40): Promise<{ rows: string[]; cursor: string }> {
    const path =
      cursor === null
        ? `/v1/projects?since=1970-01-01T00:00:00Z&limit=${limit}`
        : `/v1/projects?cursor=${cursor}&limit=${limit}`;
    const { status, body } = await get(base, path);
    assert.equal(status, 200, body.slice(0, 200));
    const parsed = JSON.parse(body) as Page;
    return { rows: parsed.projects.map((p) => p.id), cursor: parsed.cursor };
  }

  async function projected(): Promise<number> {
    for (;;) {
      const res = await fetch(`${projectorsUrl}/readyz`).catch(() => null);
      if (res?.status === 200) {
        const body = (await res.json()) as { lag?: Record<string, number | null> };
        if (Object.values(body.lag ?? {}).every((lag) => lag === 0)) return total(primaryApi);
      }
      await sleep(100);
    }
  }

  async function replicaCheckpoint(): Promise<number> {
    const [row] = await pair.replica.query<{ position: number }>(
      `SELECT position FROM pulseboard_g0.checkpoints WHERE collection = 'projects'`,
    );
    return Number(row?.position ?? 0);
  }

  beforeAll(async () => {
    pair = await createPostgresPair();
    work = mkdtempSync(join(tmpdir(), 'pulseboard-replica-'));
    const env = {
      POSTGRES_URL: pair.primary.url(),
      PULSEBOARD_DATA_DIR: join(work, 'unused'),
      PULSEBOARD_RATE_LIMIT: '1000000',
    };
    const lines = readFileSync(SAMPLE, 'utf8').trimEnd().split('\n');
    const half = Math.floor(lines.length / 2);
    writeFileSync(join(work, 'first.ndjson'), `${lines.slice(0, half).join('\n')}\n`);
    writeFileSync(join(work, 'second.ndjson'), `${lines.slice(half).join('\n')}\n`);
    for (const args of [
      ['ingest', join(work, 'first.ndjson')],
      ['owners', 'allow', 'local'],
      ['owners', 'link', 'local'],
    ]) {
      const run = await runCli(args, { env });
      assert.equal(run.code, 0, run.stderr);
    }
    const issued = await runCli(['keys', 'issue', '--owner', 'local'], { env });
    key = issued.stdout.trim();
    const projectors = await startServe(env, { args: ['--role', 'projectors'] });
    children.push(projectors.child);
    projectorsUrl = projectors.url;
    const b = await startServe(env, { args: ['--role', 'api'] });
    children.push(b.child);
    primaryApi = b.url;
    const a = await startServe({ ...env, POSTGRES_REPLICA_URL: pair.replica.url() }, { args: ['--role', 'api'] });
    children.push(a.child);
    replicaApi = a.url;
    await projected();
    await pair.caughtUp();
  });

  afterAll(async () => {
    for (const child of children) await stopChild(child, 'SIGTERM');
    await pair?.remove();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('reads the replica: while it replays nothing, the API on it serves the board as the replica has it', async () => {
    const before = await total(replicaApi);
    assert.equal(before, await total(primaryApi));
    await pair.pauseReplay();
    const run = await runCli(['ingest', join(work, 'second.ndjson')], {
      env: { POSTGRES_URL: pair.primary.url(), PULSEBOARD_DATA_DIR: join(work, 'unused') },
    });
    assert.equal(run.code, 0, run.stderr);
    const after = await projected();
    assert.ok(after > before, `the second half adds projects (${before} → ${after})`);
    // The first read after the pause: the replica's board (the primary's has the second half).
    assert.equal(await total(replicaApi), before);
  });

  it('a cursor ahead of the paused replica: the walk goes on without a row skipped or repeated', async () => {
    // The whole walk as the primary gives it, and as one consumer gives it: on the primary's API until its
    // cursor is past the replica's checkpoint, then on the replica's.
    const reference: string[] = [];
    for (let cursor: string | null = null; ;) {
      const next = await page(primaryApi, cursor);
      if (next.rows.length === 0) break;
      reference.push(...next.rows);
      cursor = next.cursor;
    }
    const stale = await replicaCheckpoint();
    const walked: string[] = [];
    let cursor: string | null = null;
    while (cursor === null || cursorSeq(cursor) <= stale) {
      const next = await page(primaryApi, cursor);
      assert.ok(next.rows.length > 0, 'the primary has rows past the replica');
      walked.push(...next.rows);
      cursor = next.cursor;
    }
    assert.ok(cursorSeq(cursor) > stale);
    // On the replica's API: empty pages while it waits for the replica, then the primary's rows once the
    // replica counts as lagging; never a row twice or one left out.
    for (let reads = 0; reads < 400; reads++) {
      const next: { rows: string[]; cursor: string } = await page(replicaApi, cursor);
      if (next.rows.length === 0) {
        if (walked.length === reference.length) break;
        assert.equal(next.cursor, cursor, 'an empty page keeps the cursor where it was');
        await sleep(50);
        continue;
      }
      walked.push(...next.rows);
      cursor = next.cursor;
    }
    assert.deepEqual(walked, reference);
    // Replaying again: the replica catches up and the walk stays where it is (nothing new, nothing again).
    await pair.resumeReplay();
    await pair.caughtUp();
    assert.equal((await page(replicaApi, cursor)).rows.length, 0);
    assert.equal(await total(replicaApi), await total(primaryApi));
  });

  it('a killed replica: the API on it serves the board and the delta from the primary, no 5xx', async () => {
    await pair.replica.kill();
    assert.equal(await total(replicaApi), await total(primaryApi));
    const first = JSON.parse((await get(replicaApi, '/v1/projects')).body) as { totalPages: number };
    for (let n = 2; n <= first.totalPages; n++) {
      const [a, b] = await Promise.all([
        get(replicaApi, `/v1/projects?page=${n}`),
        get(primaryApi, `/v1/projects?page=${n}`),
      ]);
      assert.equal(a.status, 200);
      assert.equal(a.body.replaceAll(/"readAt":"[^"]*"/g, ''), b.body.replaceAll(/"readAt":"[^"]*"/g, ''));
    }
    const walk = async (base: string) => {
      const ids: string[] = [];
      for (let cursor: string | null = null; ;) {
        const next = await page(base, cursor, 100);
        if (next.rows.length === 0) return ids;
        ids.push(...next.rows);
        cursor = next.cursor;
      }
    };
    assert.deepEqual(await walk(replicaApi), await walk(primaryApi));
  });
});
