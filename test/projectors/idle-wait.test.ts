/**
 * An idle runner sleeps on the log's append signal, not on a short timer: while nothing is appended
 * it reads neither the head nor its checkpoints again, and an append (here through another
 * connection, as another process's would be) wakes it at once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import type { EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { eventually } from '../replay/support.ts';

it('an idle runner makes no read of the log or the store until an event is appended', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-idle-'));
  const inner = createSqliteEventLog(join(dir, 'events.sqlite'));
  const other = createSqliteEventLog(join(dir, 'events.sqlite'));
  const store = createSqliteReadStore(join(dir, 'read.sqlite'));
  const reads = { head: 0, checkpoints: 0 };
  const log: EventLog = {
    ...inner,
    headPosition: () => ((reads.head += 1), inner.headPosition()),
    readAll: (o) => inner.readAll(o),
    waitForAppend: (a, t, s) => inner.waitForAppend(a, t, s),
  };
  const counted = {
    ...store,
    checkpoint: (c: string, o?: { fresh?: boolean }) => ((reads.checkpoints += 1), store.checkpoint(c, o)),
  };
  const runner = createProjectorRunner(log, counted, {
    collection: 'sightings',
    typePrefixes: ['project.'],
    keyOf: (event) => (event.data as { projectId: string }).projectId,
    fold: (_current, event) => ({ doc: event.data, state: null, sortKey: 'k', facet: 'visible', keys: {} }),
  });
  const stop = new AbortController();
  const running = runner.run(stop.signal);
  try {
    assert.ok(await eventually(() => reads.head >= 1));
    const idle = { ...reads };
    await new Promise((resolve) => setTimeout(resolve, 800));
    assert.deepEqual(reads, idle, 'nothing read while idle');
    await other.append('project-p1', [{ id: randomUUID(), type: 'project.sighted', data: { projectId: 'p1' } }]);
    assert.ok(
      await eventually(async () => (await store.get('sightings', 'p1')) !== null),
      'the append woke the runner',
    );
  } finally {
    stop.abort();
    await running;
    await other.close();
    await inner.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
