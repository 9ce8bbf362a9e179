/**
 * /readyz reports the KurrentDB append subscription's state (service/health.ts over the adapter on
 * the in-memory client): idle until something waits, live, and reconnecting (degraded) while the
 * server drops it, then live again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { createKurrentDbEventLog } from '../../eventstore/kurrentdb/kurrentdb-event-log.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { createHealth } from '../../service/health.ts';
import { eventually } from '../replay/support.ts';
import { createFakeKurrentDbServer } from '../support/kurrentdb-fake.ts';

it('readyz: the event log subscription is reported idle, live, reconnecting (degraded) and live again', async () => {
  const server = createFakeKurrentDbServer();
  const log = createKurrentDbEventLog('kurrentdb://in-memory:2113?tls=false', { client: server.client() });
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-readyz-'));
  const store = createSqliteReadStore(join(dir, 'read.sqlite'));
  const health = createHealth({ log, store, collections: ['projects'] });
  const stop = new AbortController();
  try {
    const first = await health.ready();
    assert.deepEqual([first.status, first.checks.eventLogSubscription], ['ready', 'idle']);
    const waiting = log.waitForAppend(Number.MAX_SAFE_INTEGER / 2, 3_600_000, stop.signal);
    assert.ok(await eventually(async () => (await health.ready()).checks.eventLogSubscription === 'live'));
    assert.equal((await health.ready()).status, 'ready');
    server.subscriptionsDown = true;
    server.dropSubscriptions();
    const down = await health.ready();
    assert.deepEqual([down.status, down.checks.eventLogSubscription], ['degraded', 'reconnecting']);
    server.subscriptionsDown = false;
    assert.ok(
      await eventually(async () => (await health.ready()).checks.eventLogSubscription === 'live'),
      'back once the server takes it again',
    );
    assert.equal((await health.ready()).status, 'ready');
    stop.abort();
    await waiting;
  } finally {
    stop.abort();
    await log.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
