/**
 * The analysts' export holds the calls visible at its point, each as it was then (issue 57, item 1): a
 * suppression or restore after the point moves no call's position, so the export cannot tell it from
 * the stored row alone. Compared with the calls list read live at that point, before the later events.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import { exportAsOf } from '../../service/analyst-export.ts';
import { namedPoint, resolvePoint } from '../../service/history-board.ts';
import { appendBoardHistory } from '../support/board-history.ts';
import { callId, makeCall, recordCall, restoreCall, suppressCall } from '../support/calls-fixtures.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const START = Date.parse('2026-11-01T00:00:00Z');
const now = () => new Date(Date.now()).toISOString();

describe('export --as-of: the calls visible at the point', () => {
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    h = await createHarness();
    key = await h.key('analyst', ['allow']);
  });
  afterAll(async () => {
    vi.useRealTimers();
    await h?.close();
  });

  /** Every call the live list serves now, as the export stores it (no thesis text, tokens unlinked). */
  async function liveCalls(): Promise<unknown[]> {
    const calls: unknown[] = [];
    for (let next: string | null = null; ;) {
      const page = (await h.get(`/v1/calltracker/calls?limit=5${next ? `&cursor=${next}` : ''}`, key)).json();
      for (const { thesisText: _t, tokens, ...call } of page.calls)
        calls.push({ ...call, tokens: tokens.map(({ project: _p, ...t }: { project: unknown }) => t) });
      next = page.next;
      if (next === null) return calls;
    }
  }

  async function exportedCalls(asOf: string): Promise<unknown[]> {
    const history = h.stores.store.history!;
    const archive = await h.stores.log.archiveId();
    const point = await resolvePoint({ log: h.stores.log, store: h.stores.store, history, archive }, 'asOf', asOf);
    assert.ok(point.ok);
    const dir = join(h.dir, `export-calls-${point.value.seq}`);
    mkdirSync(dir);
    const named = namedPoint(archive, point.value);
    const summary = await exportAsOf({ ...h.stores, point: point.value, named, format: 'ndjson', dir });
    const rows = readFileSync(join(dir, 'calls.ndjson'), 'utf8').trim().split('\n').filter(Boolean);
    assert.equal(summary.calls, rows.length);
    return rows.map((line) => JSON.parse(line));
  }

  it('holds a call suppressed then and restored later out, and a call visible then and suppressed later in, as it was', async () => {
    await appendBoardHistory(h.stores.log, { projects: 4, steps: 12, seed: 3 });
    const at = (n: number) => new Date(START + n * 1000).toISOString();
    for (let n = 0; n < 8; n++) {
      vi.advanceTimersByTime(1000);
      await recordCall(h, makeCall(n, { createdAt: at(n) }));
    }
    vi.advanceTimersByTime(1000);
    await suppressCall(h, callId(1), now()); // suppressed at the point, restored after it
    await suppressCall(h, callId(5), now()); // suppressed at the point and after it
    await h.stores.catchUp();
    const live = await liveCalls();
    vi.advanceTimersByTime(60_000);
    const point = now();
    vi.advanceTimersByTime(60_000);

    await restoreCall(h, callId(1), now());
    await suppressCall(h, callId(2), now()); // visible at the point, suppressed after it
    await suppressCall(h, callId(6), now()); // suppressed and restored after it: as it was
    await restoreCall(h, callId(6), now());
    vi.advanceTimersByTime(1000);
    // Edited after the point (another createdAt moves it in the list) and then suppressed.
    await recordCall(h, makeCall(3, { createdAt: at(7.5), updatedAt: now(), tokens: 2 }));
    await suppressCall(h, callId(3), now());
    await recordCall(h, makeCall(4, { createdAt: at(-1), updatedAt: now() })); // edited after the point
    await recordCall(h, makeCall(9, { createdAt: at(4.5) })); // recorded after the point
    await h.stores.catchUp();

    const exported = await exportedCalls(point);
    assert.deepEqual(exported, live);
    const ids = (calls: unknown[]) => calls.map((c) => (c as { id: string }).id);
    assert.ok(ids(exported).includes(callId(2)) && !ids(exported).includes(callId(1)));
    // The live list has moved on; the export as of the point has not.
    assert.notDeepEqual(ids(await liveCalls()), ids(live));
  });
});
