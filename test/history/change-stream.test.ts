/**
 * include=changes on the change stream (GET /v1/projects/changes): before each row, an event named
 * `changes` naming the fields that differ from the project as of the stream's starting point, the
 * same answer a delta page with include=changes gives from the same cursor; on reconnect the
 * Last-Event-ID is the new starting point.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import type { RecordedEvent } from '../../eventstore/port.ts';
import { differingFields } from '../../service/differing-fields.ts';
import { allEvents, appendHistoryRounds, boardAt } from '../support/board-history.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { cursorPosition, openStream, type SseEvent } from '../live/support.ts';

const START = Date.parse('2026-11-01T00:00:00Z');

/** The stream's events after its opening comment: `changes` and row events, heartbeats left out. */
const changeEvents = (events: readonly SseEvent[]) => events.filter((e) => e.data !== null);

describe('include=changes on the change stream', () => {
  let h: Harness;
  let key: string;
  let base: string;
  let events: RecordedEvent[];
  /** The delta cursor at the end of the first round of writes: every stream here starts from it. */
  let start: string;
  let startSeq: number;

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    h = await createHarness();
    key = await h.key('mirror', ['allow']);
    await appendHistoryRounds(
      h.stores,
      { rounds: 2, projects: 60, steps: 200, seed: 300, prefix: 's' },
      async (round) => {
        if (round > 0) return;
        const at = new Date(Date.now() + 1).toISOString();
        start = (await h.get(`/v1/projects?page=1&asOf=${encodeURIComponent(at)}`, key)).json().asOf.cursor;
        startSeq = cursorPosition(start).s;
      },
    );
    events = await allEvents(h.stores.log);
    vi.useRealTimers();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  }, 120_000);
  afterAll(async () => {
    vi.useRealTimers();
    await h?.close();
  });

  /** Every row of the delta after `cursor` by REST pages, and the first page's `changes` (include=changes). */
  async function deltaAfter(cursor: string) {
    const first = (await h.get(`/v1/projects?cursor=${cursor}&limit=20&include=changes`, key)).json();
    const rows: { id: string }[] = [...first.projects];
    for (let body = first; body.hasMore;) {
      body = (await h.get(`/v1/projects?cursor=${body.cursor}&limit=20`, key)).json();
      rows.push(...body.projects);
    }
    return { rows, firstChanges: first.changes as { id: string; changedFields: string[] }[] };
  }

  /** The changes events a stream from position `at` must send for `rows`: each row's fields that differ from then. */
  const changesSince = (at: number, rows: readonly { id: string }[]) => {
    const then = new Map(boardAt(events, at).map((d) => [d.id, d.doc]));
    return rows.map((p) => ({ id: p.id, changedFields: differingFields(then.get(p.id) ?? null, p as never) }));
  };

  it('precedes each row with its changed fields since the cursor, as a delta page with include=changes has them', async () => {
    const expected = await deltaAfter(start);
    assert.ok(expected.rows.length > 20, `${expected.rows.length} rows: more than one page`);
    const stream = await openStream(`${base}/v1/projects/changes?cursor=${start}&include=changes`, key);
    try {
      assert.equal(stream.status, 200);
      await stream.rows(expected.rows.length);
      const received = changeEvents(stream.events).slice(0, 2 * expected.rows.length);
      const changes = received.filter((_, n) => n % 2 === 0);
      const rows = received.filter((_, n) => n % 2 === 1);
      // Each changes event comes first, without an id: a reconnect after it resumes before its row and sends both.
      assert.ok(changes.every((e) => e.event === 'changes' && e.id === null));
      assert.ok(rows.every((e) => e.event === null && e.id !== null));
      assert.deepEqual(
        rows.map((e) => JSON.parse(e.data!)),
        expected.rows,
      );
      const sent = changes.map((e) => JSON.parse(e.data!));
      // Every row against the stream's one starting point, and the first page as REST's include=changes has it.
      assert.deepEqual(sent, changesSince(startSeq, expected.rows));
      assert.deepEqual(sent.slice(0, expected.firstChanges.length), expected.firstChanges);
      assert.ok(sent.some((c) => c.changedFields.length < 15) && sent.some((c) => c.changedFields.length === 15));
    } finally {
      stream.abort();
      await stream.ended;
    }
  });

  it('without include sends rows only; on reconnect the Last-Event-ID is the new starting point', async () => {
    const plain = await openStream(`${base}/v1/projects/changes?cursor=${start}`, key);
    const rows = await plain.rows(10);
    assert.ok(changeEvents(plain.events).every((e) => e.event === null));
    plain.abort();
    await plain.ended;
    const resumeAt = rows[9]!.id!;
    const expected = await deltaAfter(resumeAt);
    const resumed = await openStream(`${base}/v1/projects/changes?cursor=${start}&include=changes`, key, {
      'last-event-id': resumeAt,
    });
    try {
      await resumed.rows(expected.rows.length);
      const sent = changeEvents(resumed.events)
        .slice(0, 2 * expected.rows.length)
        .filter((e) => e.event === 'changes')
        .map((e) => JSON.parse(e.data!));
      assert.deepEqual(sent, changesSince(cursorPosition(resumeAt).s, expected.rows));
    } finally {
      resumed.abort();
      await resumed.ended;
    }
  });

  it('refuses a bad include value with a clear error', async () => {
    const res = await h.get(`/v1/projects/changes?since=now&include=everything`, key);
    assert.equal(res.status, 400, res.body);
    assert.match(res.json().error.message, /include/);
  });
});
