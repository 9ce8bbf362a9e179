/**
 * Live changes across processes on PostgreSQL (issue 60, item 3): one `serve --role projectors` and two
 * `serve --role api` processes on one database. Each API process holds a long-poll, a change stream and
 * an MCP listen; a message ingested by the CLI is folded by the projector process, and its commit's
 * NOTIFY must answer every one of them. The API processes' safety-net poll is set to an hour
 * (PULSEBOARD_COMMIT_POLL_MS), so only the notification can wake them within the test's bound.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { CLI, runCli, stopChild } from '../support/cli.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';
import { openStream } from '../live/support.ts';
import { postListen } from '../support/mcp-listen.ts';

const skip = await postgresSkipReason();
const SAMPLE = join(import.meta.dirname, '../../sample/sample.ndjson');
/** Far beyond the test's bound: a waiter answered in time was woken by the notification. */
const POLL_MS = 3_600_000;
/** A bound on each answer, not a timing: without the notification nothing answers for an hour. */
const BOUND_MS = 20_000;

type Served = { role: string; child: ChildProcess; url: string };

/** `pulseboard serve --role <role>` on a free port; resolves once it prints where it listens. */
async function serve(role: string, env: Record<string, string>): Promise<Served> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'serve', '--role', role], {
    env: { ...process.env, PORT: '0', PULSEBOARD_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  for await (const line of createInterface({ input: child.stdout })) {
    const listening = /listening on (http:\/\/\S+)\/v1/.exec(line);
    if (listening) return { role, child, url: listening[1]! };
  }
  throw new Error(`serve --role ${role} ended before listening`);
}

type Readiness = { lag: Record<string, number | null>; checks: { commitFeed?: string } };

async function readiness(url: string): Promise<Readiness | null> {
  const res = await fetch(`${url}/readyz`).catch(() => null);
  return res ? ((await res.json()) as Readiness) : null;
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    if (await check()) return;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** A 2026-07-28 subscriptions/listen for the board's list changes; resolves when one arrives. */
async function mcpListen(url: string, key: string, signal: AbortSignal): Promise<{ changed: Promise<number> }> {
  const res = await postListen(url, key, signal);
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  // Resolves once the listen is acknowledged; `changed` once the board's list_changed arrives.
  let acknowledged!: () => void;
  const ready = new Promise<void>((resolve) => (acknowledged = resolve));
  const changed = (async () => {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error('the MCP listen ended before list_changed');
      text += decoder.decode(chunk.value, { stream: true });
      if (text.includes('notifications/subscriptions/acknowledged')) acknowledged();
      if (text.includes('notifications/resources/list_changed')) return performance.now();
    }
  })();
  changed.catch(() => undefined);
  await Promise.race([ready, changed]);
  return { changed };
}

const within = <T>(promise: Promise<T>, what: string): Promise<T> =>
  Promise.race([
    promise,
    sleep(BOUND_MS).then(() => assert.fail(`${what}: no answer within ${BOUND_MS / 1000} s (no notification?)`)),
  ]);

describe('a commit of the projector process wakes the waiters of every API process', { ...skipFor(skip) }, () => {
  let database: ScratchDatabase;
  let work: string;
  let env: Record<string, string>;
  let key = '';
  const processes: Served[] = [];

  beforeAll(async () => {
    database = await scratchDatabase('pb_live_procs');
    work = mkdtempSync(join(tmpdir(), 'pulseboard-live-procs-'));
    env = {
      POSTGRES_URL: database.url,
      PULSEBOARD_DATA_DIR: join(work, 'unused'),
      PULSEBOARD_RATE_LIMIT: '1000000',
      PULSEBOARD_COMMIT_POLL_MS: String(POLL_MS),
      PULSEBOARD_THESIS_FEED: 'off',
    };
    const lines = readFileSync(SAMPLE, 'utf8').split('\n').slice(0, 200).join('\n');
    writeFileSync(join(work, 'start.ndjson'), `${lines}\n`);
    for (const args of [
      ['ingest', join(work, 'start.ndjson')],
      ['owners', 'allow', 'watcher'],
      ['owners', 'link', 'watcher'],
    ]) {
      const run = await runCli(args, { env });
      assert.equal(run.code, 0, `pulseboard ${args.join(' ')}: ${run.stderr}`);
    }
    const issued = await runCli(['keys', 'issue', '--owner', 'watcher'], { env });
    assert.equal(issued.code, 0, issued.stderr);
    key = issued.stdout.trim();
    processes.push(...(await Promise.all(['projectors', 'api', 'api'].map((role) => serve(role, env)))));
    // The projector process has folded everything, the key included, before anyone waits.
    for (const served of processes)
      await until(`${served.role} caught up`, async () => {
        const ready = await readiness(served.url);
        return ready !== null && Object.values(ready.lag).every((lag) => lag === 0);
      });
  });

  afterAll(async () => {
    for (const served of processes) await stopChild(served.child, 'SIGTERM');
    await database?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('a long-poll, a change stream and an MCP listen on each of two API processes, all answered', async () => {
    const apis = processes.filter((served) => served.role === 'api');
    const stop = new AbortController();
    const auth = { authorization: `Bearer ${key}` };
    try {
      const held = await Promise.all(
        apis.map(async (api) => {
          const bookmark = await fetch(`${api.url}/v1/projects?since=now`, { headers: auth });
          assert.equal(bookmark.status, 200);
          const { cursor } = (await bookmark.json()) as { cursor: string };
          const poll = fetch(`${api.url}/v1/projects?cursor=${cursor}&wait=30`, {
            headers: auth,
            signal: stop.signal,
          }).then(async (res) => ({ at: performance.now(), status: res.status, body: await res.text() }));
          const stream = await openStream(`${api.url}/v1/projects/changes?since=now`, key);
          assert.equal(stream.status, 200);
          const listen = await mcpListen(api.url, key, stop.signal);
          return { api, poll, stream, listen };
        }),
      );
      // Every API process has its LISTEN connection up (it opens with the first waiter): from here only
      // a NOTIFY can tell them of the commit (the poll runs hourly).
      for (const api of apis)
        await until(
          `${api.url}'s commit feed live`,
          async () => (await readiness(api.url))?.checks.commitFeed === 'live',
        );

      const message = JSON.parse(
        readFileSync(SAMPLE, 'utf8')
          .split('\n')
          .find((l) => l.includes('"project.sighted"'))!,
      ) as {
        id: string;
        data: { projectId: string; handle: string; identity: { handle: string } };
      };
      message.id = 'cross-process-sighted';
      message.data.projectId = 'prj-cross-process';
      message.data.handle = message.data.identity.handle = 'cross_process';
      writeFileSync(join(work, 'write.ndjson'), `${JSON.stringify(message)}\n`);
      const ingest = await runCli(['ingest', join(work, 'write.ndjson')], { env });
      assert.equal(ingest.code, 0, ingest.stderr);
      const appended = performance.now();

      const latencies: string[] = [];
      for (const [n, { poll, stream, listen }] of held.entries()) {
        const answered = await within(poll, `API ${n + 1}'s long-poll`);
        assert.equal(answered.status, 200, answered.body.slice(0, 200));
        assert.match(answered.body, /"prj-cross-process"/);
        const [row] = await within(stream.rows(1, BOUND_MS), `API ${n + 1}'s change stream`);
        assert.match(row!.data!, /"prj-cross-process"/);
        const changedAt = await within(listen.changed, `API ${n + 1}'s MCP listen`);
        latencies.push(
          `API ${n + 1}: long-poll ${Math.round(answered.at - appended)} ms, MCP listen ${Math.round(changedAt - appended)} ms after the ingest exited`,
        );
        stream.abort();
      }
      process.stdout.write(`${latencies.join('\n')}\n`);
    } finally {
      stop.abort();
    }
  });
});
