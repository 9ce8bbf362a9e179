/**
 * The MongoDB commit feed (readmodels/mongodb/mongodb-commit-feed.ts) over a stand-in for the driver's
 * change stream: it watches the checkpoint collections of every generation, is live once the server
 * has opened the cursor, delivers each checkpoint write, and fails on an error or a close.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { it } from 'vitest';
import type { Db } from 'mongodb';
import { mongoCommitFeed } from '../../readmodels/mongodb/mongodb-commit-feed.ts';

it("watches every generation's checkpoints, is live on the first resume token, delivers commits, fails on error", async () => {
  const streams: (EventEmitter & { close(): Promise<void>; pipeline: unknown[] })[] = [];
  const db = {
    watch(pipeline: unknown[]) {
      const stream = Object.assign(new EventEmitter(), { pipeline, close: async () => undefined });
      streams.push(stream);
      return stream;
    },
  } as unknown as Db;
  const seen: string[] = [];
  const opened = mongoCommitFeed(db).open({
    live: () => seen.push('live'),
    commit: (collection, checkpoint) => seen.push(`${collection}@${checkpoint}`),
    failed: (error) => seen.push(`failed: ${(error as Error).message}`),
  });
  const [stream] = streams;
  const match = JSON.stringify(stream!.pipeline);
  const pattern = new RegExp(
    (JSON.parse(match) as { $match: { 'ns.coll': { $regex: string } } }[])[0]!.$match['ns.coll'].$regex,
  );
  assert.ok(pattern.test('_pulseboard_checkpoints') && pattern.test('_pulseboard_checkpoints_v12'), match);
  assert.ok(!pattern.test('_pulseboard_counts') && !pattern.test('projects'), match);
  stream!.emit('resumeTokenChanged', { _data: '1' });
  stream!.emit('resumeTokenChanged', { _data: '2' });
  stream!.emit('change', {
    operationType: 'update',
    documentKey: { _id: 'projects' },
    fullDocument: { _id: 'projects', position: 42 },
  });
  stream!.emit('change', {
    operationType: 'insert',
    documentKey: { _id: 'calls' },
    fullDocument: { _id: 'calls', position: 7 },
  });
  stream!.emit('error', new Error('injected: not primary'));
  assert.deepEqual(seen, ['live', 'projects@42', 'calls@7', 'failed: injected: not primary']);
  await opened.close();
});
