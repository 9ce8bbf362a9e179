/**
 * The deployment of docker-compose.yml end to end, from the outside, as CI runs it
 * (.github/workflows/ci.yml, job "compose"): `docker compose --profile kurrentdb up` first, then this file with
 * PULSEBOARD_COMPOSE_E2E=1. Elsewhere it reports itself skipped.
 *
 *  1. A Kafka message reaches the event log (KurrentDB), the MongoDB read model, REST and MCP.
 *  2. The projector is killed, messages arrive meanwhile, it is started again: all of them are served.
 *  3. Two projector processes at once (--scale projectors=2): every message is served exactly once.
 *  4. Redis is stopped under load: basic reads keep answering 200 and /readyz stays ready.
 *
 * Deadlines here bound how long a step may take to become visible (polling), never how fast it is.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { describe, it, afterAll, beforeAll } from 'vitest';
import { skipFor } from '../support/skip.ts';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { sourceEventId } from '../../events/ids.ts';
import { streams } from '../../events/streams.ts';
import { createKurrentDbEventLog } from '../../eventstore/kurrentdb/kurrentdb-event-log.ts';
import { createKafkaFeeder, type KafkaFeeder } from '../../ingest/kafka/feeder.ts';
import { PROJECTS_COLLECTION } from '../../projectors/projects.ts';

const run = promisify(execFile);
const enabled = process.env.PULSEBOARD_COMPOSE_E2E === '1';
const skip = enabled
  ? false
  : 'runs in CI against `docker compose up` (set PULSEBOARD_COMPOSE_E2E=1 with the stack up)';

const API = process.env.PULSEBOARD_COMPOSE_API ?? 'http://127.0.0.1:8080';
const KAFKA = process.env.PULSEBOARD_COMPOSE_KAFKA ?? '127.0.0.1:9094';
const KURRENTDB = process.env.PULSEBOARD_COMPOSE_KURRENTDB ?? 'kurrentdb://127.0.0.1:2113?tls=false';
const MONGODB = process.env.PULSEBOARD_COMPOSE_MONGODB ?? 'mongodb://127.0.0.1:27017/pulseboard?directConnection=true';
const DEADLINE_MS = 120_000;

async function compose(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', ['compose', ...args], { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** Polls `check` until it returns a value (not undefined) or the deadline passes. */
async function eventually<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${DEADLINE_MS} ms${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const at = () => new Date().toISOString();

function sighting(projectId: string) {
  return {
    type: 'project.sighted',
    id: `ci-sight-${projectId}`,
    at: at(),
    data: {
      projectId,
      handle: `@ci${projectId.slice(0, 8)}`,
      identity: { kind: 'x', handle: `ci${projectId.slice(0, 8)}`, website: null, chain: null, contract: null },
      name: `CI ${projectId.slice(0, 8)}`,
      pfp: null,
      fol: 1000,
      why: 'compose end to end',
      bio: null,
    },
  };
}

function vote(projectId: string, n: number) {
  return {
    type: 'vote.cast',
    id: `ci-vote-${projectId}-${n}`,
    at: at(),
    data: { projectId, voterId: `ci-voter-${n}`, name: `Voter ${n}`, avatar: null, direction: 'up' },
  };
}

describe('compose: the distributed deployment end to end', skipFor(skip), () => {
  let key = '';
  let feeder: KafkaFeeder | undefined;

  const get = (path: string) => fetch(`${API}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const upVotes = async (projectId: string): Promise<number | undefined> => {
    const res = await get(`/v1/projects/${projectId}?include=context`);
    if (res.status !== 200) return undefined;
    const body = (await res.json()) as { context?: { votes?: { up?: number } } };
    return body.context?.votes?.up;
  };
  const votesReach = (projectId: string, count: number) =>
    eventually(`${count} votes on ${projectId} served`, async () =>
      (await upVotes(projectId)) === count ? true : undefined,
    );

  beforeAll(async () => {
    if (!enabled) return;
    key = (
      await compose(
        'exec',
        '-T',
        'api',
        'node',
        '--disable-warning=ExperimentalWarning',
        'bin/pulseboard.ts',
        'keys',
        'issue',
        '--owner',
        'ci',
      )
    ).trim();
    assert.match(key, /^pbk_/);
    feeder = await createKafkaFeeder([KAFKA], 'pulseboard-ci');
  });
  afterAll(async () => {
    await feeder?.close();
  });

  it('a Kafka message reaches the event log, the MongoDB read model, REST and MCP', { timeout: 300_000 }, async () => {
    const projectId = randomUUID();
    await feeder!.send([sighting(projectId)]);

    const log = createKurrentDbEventLog(KURRENTDB);
    try {
      const id = sourceEventId('project.sighted', `ci-sight-${projectId}`);
      await eventually('the event in KurrentDB', async () =>
        (await log.readStream(streams.project(projectId))).some((e) => e.id === id) ? true : undefined,
      );
    } finally {
      await log.close();
    }

    const mongo = await MongoClient.connect(MONGODB);
    try {
      await eventually(
        'the document in MongoDB',
        async () =>
          (await mongo.db().collection<{ _id: string }>(PROJECTS_COLLECTION).findOne({ _id: projectId })) ?? undefined,
      );
    } finally {
      await mongo.close();
    }

    const rest = await eventually('the project on REST', async () => {
      const res = await get(`/v1/projects/${projectId}`);
      return res.status === 200 ? ((await res.json()) as unknown) : undefined;
    });
    const mcp = await fetch(`${API}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${key}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_project', arguments: { handle: projectId } },
      }),
    });
    assert.equal(mcp.status, 200);
    const body = (await mcp.json()) as { result: { structuredContent: unknown } };
    assert.deepEqual(body.result.structuredContent, rest, 'MCP answers the REST body');
  });

  it(
    'a projector killed while messages arrive serves all of them once started again',
    { timeout: 300_000 },
    async () => {
      const projectId = randomUUID();
      await feeder!.send([sighting(projectId), vote(projectId, 0)]);
      await votesReach(projectId, 1);
      await compose('kill', 'projectors');
      await feeder!.send(Array.from({ length: 20 }, (_, n) => vote(projectId, n + 1)));
      await compose('start', 'projectors');
      await votesReach(projectId, 21);
    },
  );

  it('two projector processes at once serve every message exactly once', { timeout: 300_000 }, async () => {
    await compose('up', '-d', '--no-recreate', '--scale', 'projectors=2', 'projectors');
    try {
      const projectId = randomUUID();
      await feeder!.send([sighting(projectId), ...Array.from({ length: 50 }, (_, n) => vote(projectId, n))]);
      await votesReach(projectId, 50);
      // Redelivered messages (same ids) change nothing, with both processes still running.
      await feeder!.send(Array.from({ length: 50 }, (_, n) => vote(projectId, n)));
      const marker = randomUUID();
      await feeder!.send([sighting(marker)]);
      await eventually('a later message served', async () =>
        (await get(`/v1/projects/${marker}`)).status === 200 ? true : undefined,
      );
      assert.equal(await upVotes(projectId), 50);
    } finally {
      await compose('up', '-d', '--no-recreate', '--scale', 'projectors=1', 'projectors');
    }
  });

  it(
    'with Redis stopped under load, basic reads answer and the instance stays ready',
    { timeout: 300_000 },
    async () => {
      await compose('stop', 'redis');
      try {
        const statuses = new Map<number, number>();
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            for (let i = 0; i < 25; i += 1) {
              const res = await get('/v1/projects?limit=5');
              await res.arrayBuffer();
              statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            }
          }),
        );
        assert.deepEqual([...statuses.entries()], [[200, 200]], 'every basic read answered 200');
        const ready = await fetch(`${API}/readyz`);
        assert.equal(ready.status, 200, `readyz: ${await ready.text()}`);
      } finally {
        await compose('start', 'redis');
      }
    },
  );
});
