/**
 * A KurrentDB cluster whose followers lag (test/support/kurrentdb-fake.ts, `followerLag`): no reader
 * of the log moves a checkpoint past an event it never saw. The adapter reads from the leader; and
 * the runner and `settle` themselves refuse a short page that misses what the log said it holds,
 * whatever the adapter (a log wrapped to answer short is used to prove that part alone).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'vitest';
import { createKurrentDbEventLog } from '../../eventstore/kurrentdb/kurrentdb-event-log.ts';
import type { EventLog, NewEvent } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { KEYS_COLLECTION } from '../../projectors/access.ts';
import { anyProjector, type Projector } from '../../projectors/projector.ts';
import { createProjectionRunner } from '../../projectors/runner.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { issueKey } from '../../service/access.ts';
import { createFakeKurrentDbServer } from '../support/kurrentdb-fake.ts';

const URL = 'kurrentdb://in-memory:2113?tls=false';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function readStore(): ReadStore {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-lagging-'));
  const store = createSqliteReadStore(join(dir, 'read.sqlite'));
  cleanups.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

type Counted = { projectId: string; n: number };
function counter(collection: string, prefix: string): Projector<Counted, null> {
  return {
    collection,
    typePrefixes: [prefix],
    keyOf: (event) => (event.data as { projectId?: string }).projectId ?? null,
    fold(current, event) {
      const projectId = (event.data as { projectId: string }).projectId;
      return {
        doc: { projectId, n: (current?.doc.n ?? 0) + 1 },
        state: null,
        sortKey: projectId,
        facet: 'visible',
        keys: {},
      };
    },
  };
}
const event = (type: string, projectId: string): NewEvent => ({ id: randomUUID(), type, data: { projectId } });

async function appendMany(log: EventLog, n: number): Promise<void> {
  const types = ['project.sighted', 'vote.cast'];
  await log.appendBatch(
    Array.from({ length: n }, (_, i) => ({ stream: `project-p${i % 5}`, events: [event(types[i % 2]!, `p${i % 5}`)] })),
  );
}

/** Sums every counter document of a collection: the events the runner folded. */
async function folded(store: ReadStore, collection: string): Promise<number> {
  const docs = await store.getMany<Counted, null>(collection, ['p0', 'p1', 'p2', 'p3', 'p4']);
  return [...docs.values()].reduce((sum, doc) => sum + doc.doc.n, 0);
}

describe('a lagging KurrentDB follower moves no checkpoint past an event it never saw', () => {
  it('the runner: its head and its pages come from the leader, even when the connection moves between followers', async () => {
    const server = createFakeKurrentDbServer();
    const log = createKurrentDbEventLog(URL, { client: server.client() });
    cleanups.push(() => log.close());
    await appendMany(log, 40);
    // Two followers: the one answering backward reads (the head) is up to date, the other misses 30 records.
    server.followerLag = (method) => (method === 'readAll' ? 30 : 0);
    const store = readStore();
    const runner = createProjectionRunner(
      log,
      store,
      [counter('sightings', 'project.'), counter('votes', 'vote.')].map((p) => anyProjector(p)),
    );
    await runner.catchUp();
    server.followerLag = 0;
    await runner.catchUp();
    assert.equal(
      (await folded(store, 'sightings')) + (await folded(store, 'votes')),
      40,
      'every event folded once the followers caught up',
    );
    assert.equal(server.servedBy.follower, 0, 'no read of a checkpoint-moving path went to a follower');
  });

  it('settle: a key issued on the leader is in the keys read model when issueKey returns', async () => {
    const server = createFakeKurrentDbServer();
    const log = createKurrentDbEventLog(URL, { client: server.client() });
    cleanups.push(() => log.close());
    server.followerLag = 4;
    const store = readStore();
    const issued = await issueKey({ log, store }, 'alice');
    server.followerLag = 0;
    const keys = await store.getMany(KEYS_COLLECTION, [issued.keyId]);
    assert.equal(keys.size, 1, 'the key is in the read model');
  });
});

/** `inner`, whose forward reads of the whole log answer without the newest `hidden()` events, as a lagging node would. */
function shortAnswering(inner: EventLog, hidden: () => number): EventLog {
  return {
    ...inner,
    append: (stream, events, expected) => inner.append(stream, events, expected),
    appendBatch: (groups) => inner.appendBatch(groups),
    headPosition: () => inner.headPosition(),
    async readAll(options) {
      const events = await inner.readAll(options);
      const missing = hidden();
      if (missing === 0) return events;
      const all = await inner.readAll({ afterPosition: 0, limit: Number.MAX_SAFE_INTEGER });
      const horizon = all.length > missing ? all[all.length - missing - 1]!.position : 0;
      return events.filter((e) => e.position <= horizon);
    },
    close: () => inner.close(),
  };
}

describe('a log that answers short of the head it reported (any adapter)', () => {
  it('the runner commits only what it saw, and folds the rest once the log answers it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-short-'));
    const inner = createSqliteEventLog(join(dir, 'events.sqlite'));
    cleanups.push(async () => {
      await inner.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await appendMany(inner, 30);
    let missing = 7;
    const log = shortAnswering(inner, () => missing);
    const store = readStore();
    const projectors = [counter('sightings', 'project.'), counter('votes', 'vote.')].map((p) => anyProjector(p));
    const runner = createProjectionRunner(log, store, projectors);
    const stop = new AbortController();
    const running = runner.run(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const head = await inner.headPosition();
    assert.ok((await store.checkpoint('votes')) < head, 'no checkpoint at the head while its events were not seen');
    missing = 0;
    await runner.catchUp();
    stop.abort();
    await running;
    assert.equal((await folded(store, 'sightings')) + (await folded(store, 'votes')), 30, 'every event folded');
  });

  it('settle: a key whose event the log does not answer yet is settled once it does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-short-'));
    const inner = createSqliteEventLog(join(dir, 'events.sqlite'));
    cleanups.push(async () => {
      await inner.close();
      rmSync(dir, { recursive: true, force: true });
    });
    let reads = 0;
    const log = shortAnswering(inner, () => (reads++ < 3 ? 1 : 0));
    const store = readStore();
    const issued = await issueKey({ log, store }, 'bob');
    assert.equal((await store.getMany(KEYS_COLLECTION, [issued.keyId])).size, 1, 'the key is in the read model');
  });
});
