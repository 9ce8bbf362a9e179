/**
 * The history reads over HTTP (issue 43): the board, a project and a search as of a point (a time
 * or a delta cursor), the diff between two points, and include=changes on delta pages, each checked
 * against the live projector's own fold of the log up to the point, while the board keeps moving.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import type { RecordedEvent } from '../../eventstore/port.ts';
import { BOARD_PAGE_SIZE } from '../../readmodels/schemas.ts';
import { differingFields } from '../../service/differing-fields.ts';
import { allEvents, appendBoardHistory, appendHistoryRounds, boardAt } from '../support/board-history.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const START = Date.parse('2026-11-01T00:00:00Z');

describe('history reads over HTTP', () => {
  let h: Harness;
  let key: string;
  let events: RecordedEvent[];
  /** recordedAt instants between the rounds of appends, and the head position after each round. */
  const rounds: { after: string; head: number }[] = [];

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    h = await createHarness();
    key = await h.key('analyst', ['allow']);
    rounds.push(
      ...(await appendHistoryRounds(h.stores, { rounds: 4, projects: 130, steps: 250, seed: 100, prefix: 'r' })),
    );
    events = await allEvents(h.stores.log);
  }, 120_000);
  afterAll(async () => {
    vi.useRealTimers();
    await h?.close();
  });

  /** The position the service answers for a time: the last project write recorded at or before it. */
  const lastWriteAt = (time: string) => {
    let seq = 0;
    for (const e of events) if (e.recordedAt <= time) seq = e.position;
    return seq;
  };

  it('the board as of a time is the board then, with its totals; its cursor pins the same point while the board moves', async () => {
    const point = rounds[1]!;
    const reference = boardAt(events, point.head);
    assert.equal(lastWriteAt(point.after), point.head);
    assert.ok(reference.length > BOARD_PAGE_SIZE, 'more than one page');
    const first = await h.get(`/v1/projects?page=1&asOf=${encodeURIComponent(point.after)}`, key);
    assert.equal(first.status, 200, first.body);
    const body = first.json();
    assert.equal(body.total, reference.length);
    assert.equal(body.totalPages, Math.ceil(reference.length / BOARD_PAGE_SIZE));
    assert.deepEqual(
      body.projects,
      reference.slice(0, BOARD_PAGE_SIZE).map((d) => d.doc),
    );
    assert.ok(body.asOf.at <= point.after && typeof body.asOf.cursor === 'string');

    // More writes land; page 2 read with the answer's cursor is still the board at that point.
    vi.advanceTimersByTime(60_000);
    await appendBoardHistory(h.stores.log, { projects: 130, steps: 60, seed: 999, prefix: 'late' });
    await h.stores.catchUp();
    events = await allEvents(h.stores.log);
    const second = (await h.get(`/v1/projects?page=2&asOf=${body.asOf.cursor}`, key)).json();
    assert.deepEqual(
      second.projects,
      reference.slice(BOARD_PAGE_SIZE, 2 * BOARD_PAGE_SIZE).map((d) => d.doc),
    );
    assert.deepEqual(second.asOf, body.asOf);

    const dossiers = (await h.get(`/v1/projects?page=1&has_dossier=true&asOf=${body.asOf.cursor}`, key)).json();
    const withDossier = reference.filter((d) => d.facet === 'dossier');
    assert.equal(dossiers.total, withDossier.length);
    assert.deepEqual(
      dossiers.projects.map((p: { id: string }) => p.id),
      withDossier.slice(0, BOARD_PAGE_SIZE).map((d) => d.id),
    );

    const before = (await h.get('/v1/projects?asOf=2020-01-01T00:00:00Z', key)).json();
    assert.deepEqual([before.total, before.projects, before.asOf.at], [0, [], null]);
  });

  it('a project as of a point is the live fold then; before its first sighting, 404', async () => {
    const point = rounds[0]!;
    const reference = new Map(boardAt(events, point.head).map((d) => [d.id, d]));
    let checked = 0;
    for (let n = 0; n < 130; n += 7) {
      const res = await h.get(`/v1/projects/proj-${n}?asOf=${encodeURIComponent(point.after)}`, key);
      const expected = reference.get(`proj-${n}`);
      if (!expected) {
        // Sighted later (or never): not on the board at that point.
        assert.ok(res.status === 404, `proj-${n}: ${res.status}`);
        assert.equal(res.json().error.code, 'not_found');
        continue;
      }
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json().project, expected.doc);
      checked++;
    }
    assert.ok(checked > 5);
    const withContext = await h.get(`/v1/projects/proj-7?asOf=${encodeURIComponent(point.after)}&include=context`, key);
    if (reference.has('proj-7')) assert.equal(typeof withContext.json().context.votes.up, 'number');
  });

  it('the diff between two points: one row per project that differs, paged, pinned to both points', async () => {
    const [a, b] = [rounds[1]!, rounds[2]!];
    const before = new Map(boardAt(events, a.head).map((d) => [d.id, d]));
    const expected = boardAt(events, b.head)
      .filter((d) => d.seq > a.head && before.get(d.id)?.json !== d.json)
      .sort((x, y) => x.seq - y.seq);
    const rows: any[] = [];
    let url = `/v1/projects/diff?from=${encodeURIComponent(a.after)}&to=${encodeURIComponent(b.after)}&limit=17`;
    let pages = 0;
    for (; pages < 50; pages++) {
      const res = await h.get(url, key);
      assert.equal(res.status, 200, res.body);
      const body = res.json();
      rows.push(...body.changes);
      if (body.next === null) {
        assert.equal(res.headers.link, undefined, 'the last page names no follower');
        break;
      }
      // The page that follows is named in a Link header too: the body's next and the same limit.
      const link = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link));
      assert.ok(link, `a Link header: ${res.headers.link}`);
      const next = new URL(link[1]!, 'http://localhost');
      assert.equal(next.pathname, '/v1/projects/diff');
      assert.deepEqual(
        [...next.searchParams],
        [
          ['cursor', body.next],
          ['limit', '17'],
        ],
      );
      url = `${next.pathname}${next.search}`;
    }
    assert.ok(pages > 1, 'more than one page');
    assert.deepEqual(
      rows.map((r) => r.id),
      expected.map((d) => d.id),
    );
    for (const row of rows) {
      const then = before.get(row.id)?.doc ?? null;
      assert.equal(row.change, then === null ? 'added' : 'changed');
      assert.deepEqual(row.before, then);
      assert.deepEqual(row.fields, differingFields(then, row.after));
      assert.ok(row.fields.length > 0);
    }
  });

  it('include=changes on a delta page names the fields each row changed since the cursor', async () => {
    const start = (await h.get(`/v1/projects?page=1&asOf=${encodeURIComponent(rounds[2]!.after)}`, key)).json().asOf
      .cursor;
    const page = await h.get(`/v1/projects?cursor=${start}&limit=40&include=changes`, key);
    assert.equal(page.status, 200, page.body);
    const body = page.json();
    const then = new Map(boardAt(events, rounds[2]!.head).map((d) => [d.id, d.doc]));
    assert.equal(body.changes.length, body.projects.length);
    assert.ok(body.projects.length > 0);
    body.projects.forEach((p: any, i: number) => {
      assert.equal(body.changes[i].id, p.id);
      assert.deepEqual(body.changes[i].changedFields, differingFields(then.get(p.id) ?? null, p));
    });
    // The projects are the same rows a delta page without include gives.
    const plain = (await h.get(`/v1/projects?cursor=${start}&limit=40`, key)).json();
    assert.deepEqual(plain.projects, body.projects);
  });

  it('search as of a point shows the found project as it stood then', async () => {
    const point = rounds[0]!;
    const reference = new Map(boardAt(events, point.head).map((d) => [d.id, d]));
    const id = [...reference.keys()][0]!;
    const res = await h.get(`/v1/search?q=${id}&asOf=${encodeURIComponent(point.after)}`, key);
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json().state, 'found');
    assert.deepEqual(res.json().project, reference.get(id)!.doc);
    const early = (await h.get(`/v1/search?q=${id}&asOf=2020-01-01T00:00:00Z`, key)).json();
    assert.deepEqual([early.state, early.project, early.asOf.at], ['missing', null, null]);
  });

  it('refuses bad points and combinations with a clear error, never a 500', async () => {
    const cases: [string, number, RegExp][] = [
      ['/v1/projects?asOf=yesterday', 400, /asOf/],
      ['/v1/projects?asOf=2026-11-01T00:00:00Z&since=2026-11-01T00:00:00Z', 400, /board mode/],
      ['/v1/projects?asOf=2026-11-01T00:00:00Z&limit=5', 400, /delta mode/],
      ['/v1/projects?page=1&include=changes', 400, /delta mode/],
      ['/v1/projects?since=2026-11-01T00:00:00Z&include=everything', 400, /include/],
      ['/v1/projects/proj-1?asOf=not-a-cursor', 400, /asOf/],
      ['/v1/search?q=proj-1&asOf=%7B%7D', 400, /asOf/],
      ['/v1/projects/diff', 400, /from/],
      ['/v1/projects/diff?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z', 400, /later/],
      ['/v1/projects/diff?cursor=abc', 400, /cursor/],
      ['/v1/projects/diff?from=2026-11-01T00:00:00Z&cursor=abc', 400, /either/],
      ['/v1/projects/diff?from=2026-11-01T00:00:00Z&limit=1000', 400, /limit/],
      [
        `/v1/projects?asOf=${Buffer.from(JSON.stringify({ v: 1, a: 'other', s: 1, i: '', f: 'all' })).toString('base64url')}`,
        409,
        /archive/,
      ],
    ];
    for (const [url, status, message] of cases) {
      const res = await h.get(url, key);
      assert.equal(res.status, status, `${url}: ${res.body}`);
      assert.match(res.json().error.message, message, url);
    }
  });
});
