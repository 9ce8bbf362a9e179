/**
 * The fault test (issue 60): the whole deployment on this machine — two API processes (the second on a
 * host of its own, a network namespace, reading the PostgreSQL replica), one projector, one ingest from
 * a real Kafka broker, a PostgreSQL primary and replica, Redis — under a steady ingest of over 50,000
 * source messages, steady reads and two `pulseboard mirror` processes. Faults, one after another:
 * SIGKILL the projector, one API, ingest (each restarted); the second API's link cut for 10 s; Redis
 * stopped for 10 s; the replica killed. Then: every message in the log exactly once (as an embedded
 * ingest of the same messages has it), every API's board byte for byte the embedded replay's of the same
 * log (readAt aside), both mirrors and every delta walk equal to the board with no row missed or
 * repeated, and no answer a 5xx except a 503 with Retry-After. Prints what each fault cost.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Partitioners } from 'kafkajs';
import { describe, it } from 'vitest';
import { createPostgresEventLog } from '../../eventstore/postgres/postgres-event-log.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { generateLines } from '../../ingest/generate/generate.ts';
import { defaultDeadLetterTopic, defaultSourceTopics, keyFor, topicFor } from '../../ingest/kafka/topics.ts';
import { runCli } from '../support/cli.ts';
import { copyLog } from '../support/copy-log.ts';
import { createHost, pulseboardProcess, type Host, type Process } from '../support/deployment.ts';
import { kafkaSkipReason, startKafkaBroker } from '../support/kafka-broker.ts';
import { createLogReader, kafkaClient } from '../support/kafka-real.ts';
import { createPostgresPair, freePort, pairSkipReason } from '../support/postgres-pair.ts';
import { startRedisServer } from '../support/redis-server.ts';
import { skipFor } from '../support/skip.ts';

const skip =
  pairSkipReason() ||
  kafkaSkipReason() ||
  (existsSync('/usr/bin/redis-server') || process.env['PULSEBOARD_REQUIRE_SERVERS'] === '1'
    ? false
    : 'needs redis-server');

/** About 13.7 source messages a project over 8 days: over 50,000 messages. */
const PROJECTS = 3_700;
/** The steady ingest: the messages are produced over this long, while the faults happen. */
const PRODUCE_MS = 90_000;

type Answer = { api: number; at: number; status: number; retryAfter: boolean };
type Fault = { name: string; started: number; recovered: number; api: number | null };

const withoutReadAt = (body: string) => body.replaceAll(/"readAt":"[^"]*",?/g, '');
const cursorSeq = (cursor: string) => (JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { s: number }).s;

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 300_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

describe('the whole deployment under faults', { ...skipFor(skip), timeout: 1_800_000 }, () => {
  it('loses, repeats and breaks nothing, and says what each fault cost', async () => {
    const work = mkdtempSync(join(tmpdir(), 'pulseboard-faults-'));
    const host: Host | null = createHost('api2', 1);
    const cleanup: (() => Promise<unknown> | unknown)[] = [() => rmSync(work, { recursive: true, force: true })];
    if (host) cleanup.unshift(() => host.remove());
    const processes: Process[] = [];
    try {
      const pair = await createPostgresPair({ listen: host ? '*' : '127.0.0.1' });
      cleanup.unshift(() => pair.remove());
      const redis = await startRedisServer({ bind: host ? [host.gateway] : [] });
      cleanup.unshift(() => redis.close());
      const broker = await startKafkaBroker();
      cleanup.unshift(() => broker.stop());
      await broker.createTopics(
        [...defaultSourceTopics, defaultDeadLetterTopic].map((topic) => ({ topic, partitions: 2 })),
      );

      // The input, and what an embedded ingest of it puts in the log (events per message id).
      const lines = [
        ...generateLines({
          projects: PROJECTS,
          seed: 60,
          calls: PROJECTS,
          days: 8,
          hotContractCalls: 0,
          followerProvider: 'followerscope',
        }),
      ];
      assert.ok(lines.length >= 50_000, `${lines.length} messages`);
      writeFileSync(join(work, 'input.ndjson'), lines.join(''));
      const referenceDir = join(work, 'reference');
      const referenceIngest = runCli(['ingest', join(work, 'input.ndjson')], {
        env: { PULSEBOARD_DATA_DIR: referenceDir },
      });

      const env = {
        POSTGRES_URL: pair.primary.url(),
        REDIS_URL: redis.url,
        PULSEBOARD_RATE_LIMIT: '1000000',
        PULSEBOARD_DATA_DIR: join(work, 'unused'),
      };
      for (const args of [
        ['owners', 'allow', 'local'],
        ['owners', 'link', 'local'],
      ]) {
        const run = await runCli(args, { env });
        assert.equal(run.code, 0, run.stderr);
      }
      const key = (await runCli(['keys', 'issue', '--owner', 'local'], { env })).stdout.trim();
      const gateway = host?.gateway ?? '127.0.0.1';
      const role = async (name: string, args: string[], extra: Record<string, string>, on: Host | null = null) => {
        const p = pulseboardProcess({
          args,
          env: { ...env, ...extra },
          host: on,
          port: await freePort(),
          log: join(work, `${name}.log`),
          ...(args[0] === 'mirror' ? { ready: null } : {}),
        });
        processes.push(p);
        await p.start();
        return p;
      };
      const projectors = await role('projectors', ['serve', '--role', 'projectors'], {});
      const apis = [
        await role('api1', ['serve', '--role', 'api'], {}),
        await role(
          'api2',
          ['serve', '--role', 'api'],
          {
            POSTGRES_URL: pair.primary.url(gateway),
            POSTGRES_REPLICA_URL: pair.replica.url(gateway),
            REDIS_URL: `redis://${gateway}:${redis.port}`,
          },
          host,
        ),
      ];
      const ingest = await role('ingest', ['serve', '--role', 'ingest'], { KAFKA_BROKERS: broker.brokers.join(',') });
      const mirrorFiles = apis.map((_, i) => join(work, `mirror-${i + 1}.sqlite`));
      for (const [i, api] of apis.entries())
        await role(
          `mirror${i + 1}`,
          ['mirror', '--url', api.url, '--key', key, '--to', `sqlite:${mirrorFiles[i]}`],
          {},
        );

      // Steady reads: the board's first page and a delta walk on each API.
      const answers: Answer[] = [];
      const violations: string[] = [];
      const walks = apis.map(() => ({ cursor: null as string | null, rows: new Map<string, string>(), seq: -1 }));
      let reading = true;
      const request = async (api: number, path: string): Promise<string | null> => {
        const at = Date.now();
        try {
          const res = await fetch(`${apis[api]!.url}${path}`, {
            headers: { authorization: `Bearer ${key}` },
            signal: AbortSignal.timeout(5_000),
          });
          const body = await res.text();
          const retryAfter = res.headers.get('retry-after') !== null;
          answers.push({ api, at, status: res.status, retryAfter });
          // A refusal other than an outage's is the test's own mistake (a wrong parameter), not a fault's cost.
          if (res.status >= 400 && res.status < 500 && res.status !== 429)
            violations.push(`${path} on API ${api + 1}: ${res.status} ${body.slice(0, 300)}`);
          if (res.status >= 500 && !(res.status === 503 && retryAfter))
            violations.push(`${path} on API ${api + 1}: ${res.status} ${body.slice(0, 300)}`);
          return res.status === 200 ? body : null;
        } catch {
          answers.push({ api, at, status: 0, retryAfter: false });
          return null;
        }
      };
      /** One page of API `api`'s walk: rows kept by id; the cursor never goes back, never names a row twice. */
      const walkStep = async (api: number): Promise<number> => {
        const walk = walks[api]!;
        const path =
          walk.cursor === null
            ? '/v1/projects?since=1970-01-01T00:00:00Z&limit=100'
            : `/v1/projects?cursor=${walk.cursor}&limit=100`;
        const body = await request(api, path);
        if (body === null) return -1;
        const page = JSON.parse(body) as { projects: { id: string }[]; cursor: string };
        const seq = cursorSeq(page.cursor);
        if (seq < walk.seq) violations.push(`API ${api + 1}'s delta cursor went back from ${walk.seq} to ${seq}`);
        if (page.projects.length > 0 && seq <= walk.seq && walk.cursor !== null)
          violations.push(`API ${api + 1} served rows again at ${seq}`);
        for (const project of page.projects) walk.rows.set(project.id, JSON.stringify(project));
        walk.seq = Math.max(walk.seq, seq);
        walk.cursor = page.cursor;
        return page.projects.length;
      };
      const readers = apis.map(async (_, api) => {
        while (reading) {
          await request(api, '/v1/projects');
          await walkStep(api);
          await sleep(100);
        }
      });

      // The steady ingest.
      const producer = kafkaClient(broker.brokers, 'pb-fault-producer').producer({
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      let produced = false;
      const ingestReady = async () => (await fetch(`${ingest.url}/readyz`)).status === 200;
      const producing = (async () => {
        const chunk = 500;
        const started = Date.now();
        for (let start = 0; start < lines.length; start += chunk) {
          const byTopic = new Map<string, { key: string | null; value: string }[]>();
          for (const line of lines.slice(start, start + chunk)) {
            const message = JSON.parse(line) as { type: string };
            const list = byTopic.get(topicFor(message.type)) ?? [];
            list.push({ key: keyFor(message), value: line.trimEnd() });
            byTopic.set(topicFor(message.type), list);
          }
          for (const [topic, messages] of byTopic) await producer.send({ topic, acks: -1, messages });
          const due = started + (PRODUCE_MS * (start + chunk)) / lines.length;
          await sleep(Math.max(0, due - Date.now()));
        }
        await producer.disconnect();
        produced = true;
      })();

      const primaryLog = createPostgresEventLog(pair.primary.url());
      cleanup.unshift(() => primaryLog.close());
      const checkpoint = async () =>
        Number(
          (
            await pair.primary.query<{ position: string }>(
              `SELECT position FROM pulseboard_g0.checkpoints WHERE collection = 'projects'`,
            )
          )[0]?.position ?? 0,
        );
      const answered = (api: number, after: number) =>
        until(`API ${api + 1} to answer`, async () =>
          answers.some((a) => a.api === api && a.at >= after && a.status === 200) ? true : undefined,
        );

      const faults: Fault[] = [];
      let ingestRestarts = 0;
      const fault = async (
        name: string,
        api: number | null,
        inflict: () => Promise<void>,
        recovered: () => Promise<unknown>,
      ) => {
        await sleep(4_000);
        const started = Date.now();
        await inflict();
        await recovered();
        faults.push({ name, started, recovered: Date.now(), api });
        process.stdout.write(`${name}: recovered in ${(Date.now() - started) / 1000} s\n`);
      };
      await fault(
        'projector SIGKILL, restarted',
        null,
        async () => {
          const before = await checkpoint();
          await projectors.kill();
          await sleep(2_000);
          await projectors.start();
          await until('the projector to move on', async () => ((await checkpoint()) > before ? true : undefined));
        },
        async () => undefined,
      );
      let mark = 0;
      await fault(
        'API 1 SIGKILL, restarted',
        0,
        async () => {
          await apis[0]!.kill();
          await sleep(2_000);
          await apis[0]!.start();
          mark = Date.now();
        },
        () => answered(0, mark),
      );
      await fault(
        'ingest SIGKILL, restarted',
        null,
        async () => {
          const head = await primaryLog.headPosition();
          await ingest.kill();
          await sleep(2_000);
          // Restarted as an orchestrator would: until it stays up. A start soon after the crash can exit 1
          // (the group waits out the dead member's session past serve's 15 s start deadline).
          for (let attempt = 1; ; attempt++) {
            const started = await ingest.start().then(
              () => true,
              (error: unknown) => {
                if (attempt >= 10) throw error;
                return false;
              },
            );
            if (started) break;
            ingestRestarts += 1;
          }
          // Appending again, or nothing was left to append (the producer had finished).
          await until('ingest to append again', async () => {
            if ((await primaryLog.headPosition()) > head) return true;
            return produced && (await ingestReady()) ? true : undefined;
          });
        },
        async () => undefined,
      );
      await fault(
        host ? "API 2's link cut for 10 s" : 'API 2 stopped (SIGSTOP) for 10 s, no namespaces here',
        1,
        async () => {
          if (host) host.cut();
          else apis[1]!.child()?.kill('SIGSTOP');
          await sleep(10_000);
          if (host) host.restore();
          else apis[1]!.child()?.kill('SIGCONT');
          mark = Date.now();
        },
        () => answered(1, mark),
      );
      await fault(
        'Redis stopped for 10 s',
        null,
        async () => {
          await redis.stop();
          await sleep(10_000);
          await redis.restart();
          mark = Date.now();
        },
        () => Promise.all([answered(0, mark), answered(1, mark)]),
      );
      await fault(
        'replica killed (API 2 reads the primary)',
        1,
        async () => {
          await pair.replica.kill();
          mark = Date.now();
        },
        () => answered(1, mark),
      );
      await producing;
      const table = faults.map((f) => {
        const during = answers.filter(
          (a) => a.at >= f.started && a.at <= f.recovered && (f.api === null || a.api === f.api),
        );
        const refused = during.filter((a) => a.status !== 200);
        return {
          fault: f.name,
          'recovered in (s)': ((f.recovered - f.started) / 1000).toFixed(1),
          requests: during.length,
          refused: refused.length,
          '503 with Retry-After': refused.filter((a) => a.status === 503 && a.retryAfter).length,
          'no answer': refused.filter((a) => a.status === 0).length,
        };
      });
      process.stdout.write(
        `\nfaults under a steady ingest of ${lines.length} messages (${answers.length} reads so far; ingest exited at ${ingestRestarts} restarts):\n`,
      );
      console.table(table);

      // Everything ingested and projected.
      const reference = await referenceIngest;
      assert.equal(reference.code, 0, reference.stderr);
      const referenceLog = createSqliteEventLog(join(referenceDir, 'events.sqlite'));
      const expected = await createLogReader(referenceLog).read();
      await referenceLog.close();
      const stored = await until('every message in the log', async () => {
        const counts = await createLogReader(primaryLog).read();
        return [...expected.keys()].every((id) => counts.has(id)) ? counts : undefined;
      });
      for (const [id, count] of expected) assert.equal(stored.get(id), count, `message ${id}'s events in the log`);
      const ownEvents = [...stored.keys()].filter((id) => !expected.has(id));
      assert.ok(ownEvents.length <= 3, `events of no input message: ${ownEvents.length}`);
      const head = await primaryLog.headPosition();
      await until('the projector to catch up', async () => ((await checkpoint()) >= head ? true : undefined));
      reading = false;
      await Promise.all(readers);

      // The embedded replay of the same log.
      const embeddedDir = join(work, 'embedded');
      mkdirSync(embeddedDir);
      await copyLog(pair.primary.url(), embeddedDir);
      const embedded = await role('embedded', ['serve'], {
        PULSEBOARD_DATA_DIR: embeddedDir,
        POSTGRES_URL: '',
        REDIS_URL: '',
        PULSEBOARD_THESIS_FEED: 'off',
      });
      await until('the embedded replay', async () => {
        const res = await fetch(`${embedded.url}/readyz`);
        const body = (await res.json()) as { lag?: Record<string, number | null> };
        return res.status === 200 && Object.values(body.lag ?? {}).every((lag) => lag === 0) ? true : undefined;
      });
      const get = async (base: string, path: string) => {
        const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(res.status, 200, path);
        return res.text();
      };
      const board = new Map<string, string>();
      const first = JSON.parse(await get(embedded.url, '/v1/projects')) as { totalPages: number };
      for (let page = 1; page <= first.totalPages; page++) {
        const path = `/v1/projects?page=${page}`;
        const body = await get(embedded.url, path);
        const expectedPage = withoutReadAt(body);
        for (const project of (JSON.parse(body) as { projects: { id: string }[] }).projects)
          board.set(project.id, JSON.stringify(project));
        for (const api of apis)
          assert.equal(withoutReadAt(await get(api.url, path)), expectedPage, `${api.url}${path}`);
      }
      // Each walk to its end: every project as the board has it.
      for (const api of apis.keys()) {
        for (let rows = -1; rows !== 0;) {
          rows = await walkStep(api);
          assert.notEqual(rows, -1, `API ${api + 1}'s delta page refused`);
        }
        assert.deepEqual(new Map([...walks[api]!.rows].sort()), new Map([...board].sort()), `API ${api + 1}'s walk`);
      }
      for (const file of mirrorFiles) {
        await until(
          `${file} to equal the board`,
          async () => {
            const db = new DatabaseSync(file, { readOnly: true });
            try {
              const rows = db.prepare('SELECT id, project FROM pulseboard_mirror').all() as {
                id: string;
                project: string;
              }[];
              const mirrored = new Map(rows.map((r) => [r.id, JSON.stringify(JSON.parse(r.project))]));
              return mirrored.size === board.size && [...board].every(([id, json]) => mirrored.get(id) === json)
                ? true
                : undefined;
            } finally {
              db.close();
            }
          },
          120_000,
        );
      }
      assert.deepEqual(violations, []);
    } catch (error) {
      // The processes' logs, for the failure's cause.
      cpSync(work, join(tmpdir(), `pulseboard-faults-logs-${process.pid}`), {
        recursive: true,
        filter: (f) => !f.includes('reference') && !f.includes('embedded') && !f.endsWith('.ndjson'),
      });
      throw error;
    } finally {
      for (const p of processes) await p.kill('SIGKILL').catch(() => undefined);
      for (const step of cleanup) await Promise.resolve(step()).catch(() => undefined);
    }
  });
});
