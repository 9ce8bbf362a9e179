/**
 * The MongoDB stack serves the history like the embedded one: the board as of a time, a project as of
 * it, the diff between two points over HTTP, and the analysts' export, checked against the projector's
 * own fold of the log. Once with the read store on the in-memory driver stand-in (no Docker needed),
 * and once through `openStores` with MONGODB_URL on a real server where a Docker engine answers.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it, vi } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { parseConfig } from '../../config/config.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { mongoReadStoreOn } from '../../readmodels/mongodb/mongodb-read-store.ts';
import { BOARD_PAGE_SIZE } from '../../readmodels/schemas.ts';
import { changeOwner, issueKey } from '../../service/access.ts';
import { exportAsOf } from '../../service/analyst-export.ts';
import { namedPoint, resolvePoint } from '../../service/history-board.ts';
import { createRateLimiter } from '../../service/rate/create.ts';
import { createServices } from '../../service/services.ts';
import { assembleStores, type Stores } from '../../service/stores.ts';
import { allEvents, appendBoardHistory, boardAt } from '../support/board-history.ts';
import { skipUnlessDocker, startMongo } from '../support/containers.ts';
import { createHarness } from '../support/harness.ts';
import { fakeMongo } from '../support/mongodb-fake.ts';
import { skipFor } from '../support/skip.ts';

const START = Date.parse('2026-11-01T00:00:00Z');
const skipDocker = await skipUnlessDocker('MongoDB');

type Served = {
  stores: Stores;
  dir: string;
  key: string;
  get(url: string): Promise<{ status: number; body: string; json: () => any }>;
  close(): Promise<void>;
};

/** The service over the MongoDB read store on the driver stand-in, an embedded log beside it. */
async function onStandIn(): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-mongo-stack-'));
  const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '1000000' });
  if (!parsed.ok) throw new Error(parsed.reason);
  const stores = assembleStores(
    createSqliteEventLog(join(dir, 'events.sqlite')),
    mongoReadStoreOn(fakeMongo().client, 0, { ownsClient: false }),
  );
  const limiter = await createRateLimiter(parsed.config);
  const app = buildApp(createServices({ config: parsed.config, stores, limiter }));
  await app.ready();
  await changeOwner(stores, 'analyst', 'allow');
  const { key } = await issueKey(stores, 'analyst');
  return {
    stores,
    dir,
    key,
    async get(url) {
      const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
      return { status: res.statusCode, body: res.body, json: () => JSON.parse(res.body) };
    },
    async close() {
      await app.close();
      await limiter.close();
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `openStores` with MONGODB_URL (the real wiring), through the test harness. */
async function onServer(url: string): Promise<Served> {
  const h = await createHarness({ env: { MONGODB_URL: url } });
  const key = await h.key('analyst', ['allow']);
  return {
    stores: h.stores,
    dir: h.dir,
    key,
    get: (path) => h.get(path, key),
    close: () => h.close(),
  };
}

async function servesHistory(open: () => Promise<Served>): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'], now: START });
  const s = await open();
  try {
    const rounds: { after: string; head: number }[] = [];
    for (let round = 0; round < 3; round++) {
      vi.advanceTimersByTime(60_000);
      await appendBoardHistory(s.stores.log, { projects: 90, steps: 200, seed: 300 + round, prefix: `m${round}` });
      await s.stores.catchUp();
      vi.advanceTimersByTime(60_000);
      const events = await allEvents(s.stores.log);
      rounds.push({ after: new Date(Date.now() - 30_000).toISOString(), head: events[events.length - 1]!.position });
    }
    const events = await allEvents(s.stores.log);

    // The board as of the first round, page 2, and one facet: the fold of the log up to that point.
    const point = rounds[0]!;
    const reference = boardAt(events, point.head);
    assert.ok(reference.length > BOARD_PAGE_SIZE, 'more than one page');
    const page = await s.get(`/v1/projects?page=2&asOf=${encodeURIComponent(point.after)}`);
    assert.equal(page.status, 200, page.body);
    assert.equal(page.json().total, reference.length);
    assert.deepEqual(
      page.json().projects,
      reference.slice(BOARD_PAGE_SIZE, 2 * BOARD_PAGE_SIZE).map((d) => d.doc),
    );
    const dossiers = (await s.get(`/v1/projects?page=1&has_dossier=true&asOf=${page.json().asOf.cursor}`)).json();
    assert.equal(dossiers.total, reference.filter((d) => d.facet === 'dossier').length);

    // A project as of the point, one that changed since: its version then, not today's document.
    const now = new Map(boardAt(events, rounds[2]!.head).map((d) => [d.id, d]));
    const one = reference.find((d) => now.get(d.id)!.json !== d.json)!;
    const project = await s.get(`/v1/projects/${one.id}?asOf=${encodeURIComponent(point.after)}`);
    assert.equal(project.status, 200, project.body);
    assert.deepEqual(project.json().project, one.doc);

    // The diff between the first and the third round, paged.
    const before = new Map(reference.map((d) => [d.id, d]));
    const expected = boardAt(events, rounds[2]!.head)
      .filter((d) => d.seq > point.head && before.get(d.id)?.json !== d.json)
      .sort((x, y) => x.seq - y.seq);
    const ids: string[] = [];
    let url = `/v1/projects/diff?from=${encodeURIComponent(point.after)}&to=${encodeURIComponent(rounds[2]!.after)}&limit=23`;
    for (let pages = 0; pages < 50; pages++) {
      const res = await s.get(url);
      assert.equal(res.status, 200, res.body);
      ids.push(...res.json().changes.map((row: { id: string }) => row.id));
      if (res.json().next === null) break;
      url = `/v1/projects/diff?cursor=${res.json().next}&limit=23`;
    }
    assert.deepEqual(
      ids,
      expected.map((d) => d.id),
    );

    // The export as of the point: the board's rows in board order.
    const history = s.stores.store.history!;
    const archive = await s.stores.log.archiveId();
    const resolved = await resolvePoint(
      { log: s.stores.log, store: s.stores.store, history, archive },
      'asOf',
      point.after,
    );
    assert.ok(resolved.ok);
    const dir = join(s.dir, 'export');
    mkdirSync(dir);
    const summary = await exportAsOf({
      log: s.stores.log,
      store: s.stores.store,
      point: resolved.value,
      named: namedPoint(archive, resolved.value),
      format: 'ndjson',
      dir,
    });
    assert.equal(summary.projects, reference.length);
    const lines = readFileSync(join(dir, 'projects.ndjson'), 'utf8').trim().split('\n');
    assert.equal(lines.length, reference.length);
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { id: string }).id),
      reference.map((d) => d.id),
    );
  } finally {
    vi.useRealTimers();
    await s.close();
  }
}

describe('the MongoDB stack serves the history', () => {
  let server: Awaited<ReturnType<typeof startMongo>> | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it('read store on the driver stand-in: asOf, diff and export as on the embedded stack', { timeout: 120_000 }, () =>
    servesHistory(onStandIn),
  );

  it('openStores with MONGODB_URL on a real server', { ...skipFor(skipDocker), timeout: 300_000 }, async () => {
    server = await startMongo();
    await servesHistory(() => onServer(server!.url('pulseboard_history_stack')));
  });
});
