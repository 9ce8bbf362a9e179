import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { sourceEventId } from '../../events/ids.ts';
import { sourceTypes } from '../../events/source.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { CALL_ID, example, examples, line } from './examples.ts';
import { tempLog } from './helpers.ts';

describe('ingest pipeline', () => {
  let log: EventLog;
  let cleanup: () => Promise<void>;
  beforeEach(() => {
    ({ log, cleanup } = tempLog());
  });
  afterEach(async () => {
    await cleanup();
  });

  it('accepts every type once, then reports duplicates without appending', async () => {
    const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
    for (const type of sourceTypes) {
      assert.deepEqual(await ingestor.ingest(line(examples[type]), 'ndjson'), { status: 'accepted' }, type);
    }
    const head = await log.headPosition();
    const stored = await log.readAll({ afterPosition: 0, limit: 100 });
    assert.equal(stored.length, sourceTypes.length);
    assert.deepEqual(
      stored.map((e) => e.type),
      sourceTypes,
    );
    for (const type of sourceTypes) {
      assert.deepEqual(await ingestor.ingest(line(examples[type]), 'kafka'), { status: 'duplicate' }, type);
    }
    assert.equal(await log.headPosition(), head);
  });

  it('a batch stores what one-by-one ingest stores, with one outcome per message in order', async () => {
    const batchLog = tempLog();
    try {
      const bad = example('pulse.published');
      bad.data.card.beat = 'weather';
      const raws = [
        ...sourceTypes.map((type) => line(examples[type])),
        line(bad),
        line(examples['vote.cast']), // the same message again inside the batch
        'not json',
      ];
      const single = createIngestor(log, { followerProvider: 'followerscope' });
      const expected = [];
      for (const raw of raws) expected.push(await single.ingest(raw, 'ndjson'));
      const batch = createIngestor(batchLog.log, { followerProvider: 'followerscope' });
      const outcomes = await batch.ingestBatch(raws, 'ndjson');
      assert.deepEqual(outcomes, expected);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        [...sourceTypes.map(() => 'accepted'), 'rejected', 'duplicate', 'rejected'],
      );
      const strip = (events: Awaited<ReturnType<EventLog['readAll']>>) =>
        events.map(({ recordedAt: _at, ...rest }) => rest);
      assert.deepEqual(
        strip(await batchLog.log.readAll({ afterPosition: 0, limit: 100 })),
        strip(await log.readAll({ afterPosition: 0, limit: 100 })),
      );
      assert.deepEqual(
        (await batch.ingestBatch(raws, 'kafka')).map((o) => o.status),
        [...sourceTypes.map(() => 'duplicate'), 'rejected', 'duplicate', 'rejected'],
      );
    } finally {
      await batchLog.cleanup();
    }
  });

  it('stores the event with its derived id, data + at and metadata', async () => {
    const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
    await ingestor.ingest(line(examples['project.sighted']), 'kafka');
    const [event] = await log.readStream('project-p1');
    assert.ok(event);
    assert.equal(event.id, sourceEventId('project.sighted', 'sight-1'));
    assert.deepEqual(event.metadata, { source: 'kafka', messageId: 'sight-1' });
    assert.deepEqual(event.data, {
      ...examples['project.sighted'].data,
      handle: 'AlphaLabs',
      at: examples['project.sighted'].at,
    });
  });

  it('appends an edit of a call (new message id, same call id) to the same stream', async () => {
    const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
    const edit = example('call.recorded');
    edit.id = 'call-1-edit';
    edit.data.updatedAt = '2026-11-21T00:00:00Z';
    assert.equal((await ingestor.ingest(line(examples['call.recorded']), 'ndjson')).status, 'accepted');
    assert.equal((await ingestor.ingest(line(edit), 'ndjson')).status, 'accepted');
    const stream = await log.readStream(`call-${CALL_ID}`);
    assert.deepEqual(
      stream.map((e) => (e.data as { updatedAt: string }).updatedAt),
      ['2026-11-20T07:00:00Z', '2026-11-21T00:00:00Z'],
    );
  });

  it('appends nothing for a rejected message and names the path', async () => {
    const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
    const bad = example('followers.observed');
    bad.data.source = 'elsewhere';
    const outcome = await ingestor.ingest(line(bad), 'ndjson');
    assert.equal(outcome.status, 'rejected');
    assert.equal(outcome.status === 'rejected' && outcome.path, 'data.source');
    assert.deepEqual(await ingestor.ingest('not json', 'ndjson'), {
      status: 'rejected',
      path: '(message)',
      reason: 'not valid JSON',
    });
    const truncated = await ingestor.ingest('{"type": "rival.listed", "id": "r1"', 'ndjson');
    assert.deepEqual(truncated, { status: 'rejected', path: '(message)', reason: 'not valid JSON (at character 36)' });
    assert.equal(await log.headPosition(), 0);
  });

  it('uses the configured follower provider', async () => {
    const ingestor = createIngestor(log, { followerProvider: 'tallyfollow' });
    assert.equal((await ingestor.ingest(line(examples['followers.observed']), 'ndjson')).status, 'rejected');
    const ours = example('followers.observed');
    ours.data.source = 'tallyfollow';
    assert.equal((await ingestor.ingest(line(ours), 'ndjson')).status, 'accepted');
  });

  it('throws, rather than rejecting, when the event log fails', async () => {
    const failing: EventLog = {
      ...log,
      append: () => Promise.reject(new Error('disk full')),
    };
    const ingestor = createIngestor(failing, { followerProvider: 'followerscope' });
    await assert.rejects(ingestor.ingest(line(examples['rival.listed']), 'ndjson'), /disk full/);
  });
});
