/**
 * A replay hands its runner every limit it is given (service/replay.ts), the heap share too: the runner
 * looks at the heap once a batch holds 10,000 documents, so with a share of 0 a replay of 12,000 new
 * projects commits after its first page of 10,000 events, and with the default share in one batch.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, it } from 'vitest';
import { sourceEventId } from '../../events/ids.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { projectsProjector } from '../../projectors/projects.ts';
import { anyProjector } from '../../projectors/projector.ts';
import { createSqliteGenerationSpace } from '../../readmodels/sqlite/generations.ts';
import { replayReadModels } from '../../service/replay.ts';

const PROJECTS = 12_000;
let dir: string;
let log: EventLog;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pulseboard-replay-limits-'));
  log = createSqliteEventLog(join(dir, 'events.sqlite'));
  await log.appendBatch(
    Array.from({ length: PROJECTS }, (_, i) => ({
      stream: `project-p${i}`,
      events: [
        {
          id: sourceEventId('project.sighted', `limits-${i}`),
          type: 'project.sighted',
          data: { projectId: `p${i}`, at: '2026-11-01T00:00:00Z', fol: i },
          metadata: {},
        },
      ],
    })),
  );
});

afterAll(async () => {
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The positions the replay reported after each commit (and once more when done). */
async function committedAt(name: string, maxHeapShare?: number): Promise<number[]> {
  const positions: number[] = [];
  const outcome = await replayReadModels({
    space: createSqliteGenerationSpace(join(dir, name)),
    log,
    projectors: [anyProjector(projectsProjector)],
    ...(maxHeapShare === undefined ? {} : { maxHeapShare }),
    onProgress: (progress) => positions.push(progress.position),
  });
  assert.ok(outcome.ok, outcome.ok ? '' : outcome.reason);
  return positions;
}

it('a replay commits at the heap share it is given', async () => {
  assert.deepEqual(await committedAt('default'), [PROJECTS, PROJECTS], 'one batch with the default share');
  assert.deepEqual(await committedAt('none', 0), [10_000, PROJECTS, PROJECTS], 'a share of 0 ends the first batch');
});
