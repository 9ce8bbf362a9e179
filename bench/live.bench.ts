/**
 * Live changes on one process (issues 16 and 60): idle long-polls (BENCH_LIVE_POLLS, default 1,000) and
 * open change streams (2 per key of BENCH_LIVE_STREAM_KEYS, default 100) against this process's server,
 * held by client processes of their own (bench/live-clients.ts; BENCH_LIVE_CLIENTS, default one per
 * 2,500 waiters) so the CPU measured is the server's alone. Prints the server's CPU while idle (per
 * second, and as a share of one core) as a ratio to the same process with no waiter, the time from a
 * commit to the last waiter answered as a ratio to one waiter, the server's memory per held waiter, and
 * any request that was not answered 200 (by status). 10,000 waiters need `ulimit -n` above 10,000 on
 * both sides (one socket each).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NO_WARNING } from '../bin/start-command.ts';
import { sourceEventId } from '../events/ids.ts';
import { PROJECTS_COLLECTION } from '../projectors/projects.ts';
import { issueKey } from '../service/access.ts';
import { median } from './median.ts';
import { openBenchApp } from './reads-server.ts';

const POLLS = Number(process.env.BENCH_LIVE_POLLS ?? 1_000);
const STREAM_KEYS = Number(process.env.BENCH_LIVE_STREAM_KEYS ?? 100);
const STREAMS_PER_KEY = 2;
const IDLE_MS = Number(process.env.BENCH_LIVE_IDLE_MS ?? 3_000);
const ROUNDS = Number(process.env.BENCH_LIVE_ROUNDS ?? 5);
const CLIENTS = Number(
  process.env.BENCH_LIVE_CLIENTS ?? Math.max(1, Math.ceil((POLLS + STREAM_KEYS * STREAMS_PER_KEY) / 2_500)),
);

const now = () => performance.timeOrigin + performance.now();

type Collected = { pollAnswers: number[]; streamEvents: number[]; cursor: string; refused: Record<string, number> };

/** One client process: each command is answered by one message. */
function client(): { send(message: object): Promise<unknown>; stop(): void } {
  const child = fork(join(import.meta.dirname, 'live-clients.ts'), { execArgv: [NO_WARNING] });
  return {
    send: async (message: object) => {
      const reply = once(child, 'message');
      child.send(message);
      return (await reply)[0];
    },
    stop: () => child.send({ cmd: 'stop' }),
  };
}

/** `CLIENTS` client processes: polls and stream keys are dealt out among them, answers gathered from all. */
function clients() {
  const all = Array.from({ length: CLIENTS }, client);
  const share = (count: number, n: number) => Math.floor(count / CLIENTS) + (n < count % CLIENTS ? 1 : 0);
  return {
    polls: (base: string, key: string, cursor: string, count: number) =>
      Promise.all(all.map((c, n) => c.send({ cmd: 'polls', base, key, cursor, count: share(count, n) }))),
    streams: (base: string, keys: string[], perKey: number) =>
      Promise.all(
        all.map((c, n) => c.send({ cmd: 'streams', base, keys: keys.filter((_, k) => k % CLIENTS === n), perKey })),
      ),
    async collect(): Promise<Collected> {
      const got = (await Promise.all(all.map((c) => c.send({ cmd: 'collect' })))) as Collected[];
      const refused: Record<string, number> = {};
      for (const g of got) for (const [what, n] of Object.entries(g.refused)) refused[what] = (refused[what] ?? 0) + n;
      return {
        pollAnswers: got.flatMap((g) => g.pollAnswers),
        streamEvents: got.flatMap((g) => g.streamEvents),
        cursor: got.find((g) => g.cursor)?.cursor ?? '',
        refused,
      };
    },
    stop: () => all.forEach((c) => c.stop()),
  };
}

/** The server's heap (after a full collection where --expose-gc allows) and resident set, in bytes. */
function memory(): { heap: number; rss: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, rss: usage.rss };
}

/** Polls `check` every 5 ms; fails after 3 minutes, saying what it waited for. */
async function until(check: () => boolean | Promise<boolean>, what: string | (() => string)): Promise<void> {
  for (const deadline = Date.now() + 180_000; !(await check()); await sleep(5))
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
}

/** This process's CPU time (user + system) per second of wall time over `ms`, in milliseconds. */
async function idleCpu(ms: number): Promise<number> {
  const before = process.cpuUsage();
  const t0 = performance.now();
  await sleep(ms);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / ((performance.now() - t0) / 1000);
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-live-bench-'));
  const server = await openBenchApp(dir);
  const { stores, services } = server;
  const base = await server.app.listen({ host: '127.0.0.1', port: 0 });
  const load = clients();
  try {
    let written = 0;
    let committedAt = 0;
    stores.commits.subscribe((collection) => {
      if (collection === PROJECTS_COLLECTION) committedAt = now();
    });
    /** One project write, committed by this process's projectors (their commit signal wakes the waiters). */
    const commit = async () => {
      const [projectId, type] = [`live-${written++}`, 'project.sighted'];
      const data = { projectId, at: new Date().toISOString(), fol: written };
      await stores.log.append(`project-${projectId}`, [
        { id: sourceEventId(type, projectId), type, data, metadata: {} },
      ]);
      await stores.catchUp();
    };
    for (let n = 0; n < 1_000; n++) await commit();
    const pollKey = (await issueKey(stores, 'bench-polls')).key;
    const streamKeys: string[] = [];
    for (let n = 0; n < STREAM_KEYS; n++) streamKeys.push((await issueKey(stores, `bench-streams-${n}`)).key);
    await stores.catchUp();
    const bookmark = async () => {
      const page = await services.projects.sync({ since: 'now' });
      if (!page.ok) throw new Error(page.error.message);
      return page.value.value().cursor;
    };

    const refused: Record<string, number> = {};
    const refusedCount = () => Object.values(refused).reduce((a, b) => a + b, 0);
    const gather = async (into: Collected) => {
      const got = await load.collect();
      into.pollAnswers.push(...got.pollAnswers);
      into.streamEvents.push(...got.streamEvents);
      for (const [what, n] of Object.entries(got.refused)) refused[what] = (refused[what] ?? 0) + n;
    };
    let heldMemory: { heap: number; rss: number } | null = null;
    /** Commit-to-answer of `polls` long-polls (and every open stream's event), in ms: the last one. */
    const round = async (polls: number, streams: number): Promise<{ lastMs: number; idleCpuMs: number | null }> => {
      const answered: Collected = { pollAnswers: [], streamEvents: [], cursor: '', refused: {} };
      const before = refusedCount();
      await load.polls(base, pollKey, await bookmark(), polls);
      await until(
        async () => {
          if (services.commits.waiting() === polls + streams) return true;
          // A refused poll (a 408, a reset) never waits: stop counting on it.
          await gather(answered);
          return services.commits.waiting() === polls + streams - (refusedCount() - before);
        },
        () => `${polls + streams} waiters (${services.commits.waiting()} wait; refused: ${JSON.stringify(refused)})`,
      );
      if (polls + streams > 1) heldMemory ??= memory();
      const idleCpuMs = polls + streams > 1 ? await idleCpu(IDLE_MS) : null;
      await commit();
      await until(async () => {
        await gather(answered);
        return (
          answered.pollAnswers.length + (refusedCount() - before) >= polls && answered.streamEvents.length >= streams
        );
      }, 'every waiter answered');
      const last = Math.max(...answered.pollAnswers, ...answered.streamEvents);
      return { lastMs: last - committedAt, idleCpuMs };
    };

    await sleep(500);
    const baselineCpu: number[] = [];
    for (let n = 0; n < 3; n++) baselineCpu.push(await idleCpu(IDLE_MS));
    const single: number[] = [];
    for (let n = 0; n < ROUNDS; n++) single.push((await round(1, 0)).lastMs);

    const streams = STREAM_KEYS * STREAMS_PER_KEY;
    const unheld = memory();
    await load.streams(base, streamKeys, STREAMS_PER_KEY);
    await until(
      () => services.changes.openCount() === streams && services.commits.waiting() === streams,
      `${streams} open streams`,
    );
    const loaded: number[] = [];
    const loadedCpu: number[] = [];
    for (let n = 0; n < ROUNDS; n++) {
      const r = await round(POLLS, streams);
      loaded.push(r.lastMs);
      loadedCpu.push(r.idleCpuMs!);
    }
    const checkpointReads = services.commits.reads();

    const [cpu0, cpu1, gap1, gapN] = [baselineCpu, loadedCpu, single, loaded].map(median) as [
      number,
      number,
      number,
      number,
    ];
    const [waiters, held, ms] = [
      POLLS + streams,
      heldMemory ?? unheld,
      (v: number[]) => v.map((x) => x.toFixed(1)).join(' '),
    ];
    const perWaiter = (bytes: number) => (bytes / waiters / 1024).toFixed(1);
    const gc = (globalThis as { gc?: unknown }).gc ? '' : '; run with --expose-gc for a collected heap';
    process.stdout.write(
      `live changes on one process: ${POLLS} idle long-polls + ${streams} change streams (median of ${ROUNDS} rounds; idle windows ${IDLE_MS} ms)\n` +
        `server CPU while idle: ${cpu1.toFixed(2)} ms/s, ${(cpu1 / cpu0).toFixed(2)}x of no waiter (${cpu0.toFixed(2)} ms/s); ${(cpu1 / 10).toFixed(2)} % of one core (${CLIENTS} client processes)\n` +
        `commit -> last answer: ${gapN.toFixed(1)} ms, ${(gapN / gap1).toFixed(2)}x of one long-poll (${gap1.toFixed(1)} ms); rounds ${ms(loaded)} (one waiter: ${ms(single)})\n` +
        `server memory per held waiter: ${perWaiter(held.heap - unheld.heap)} KiB heap, ${perWaiter(held.rss - unheld.rss)} KiB resident (${waiters} waiters${gc})\n` +
        `requests not answered 200: ${refusedCount() === 0 ? 'none' : JSON.stringify(refused)}; checkpoint reads by the commit watch: ${checkpointReads}\n`,
    );
  } finally {
    load.stop();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
