/**
 * Every commit of every process, from MongoDB itself: a change stream on the database, matching the
 * checkpoint collections of every generation (`_pulseboard_checkpoints`, `…_v<N>`), so a process that
 * serves long-polls hears another process's commits without reading the checkpoint every 250 ms.
 * It is live once the server has opened the cursor (the driver reports the first resume token); the
 * driver resumes it by itself after a transient error, and anything else ends it (commit-signal.ts then
 * reopens it after a backoff, and waiters poll meanwhile).
 */
import type { ChangeStream, ChangeStreamDocument, Db, Document } from 'mongodb';
import type { CommitFeed } from '../commit-signal.ts';
import { CHECKPOINTS, GENERATIONS_COLLECTION } from './mongodb-layout.ts';

export function mongoCommitFeed(db: Db): CommitFeed {
  return {
    open(handlers) {
      const stream = db.watch<{ _id: string; position?: number }>(
        [
          {
            $match: {
              'ns.coll': { $regex: `^${CHECKPOINTS}(_v[1-9][0-9]*)?$` },
              operationType: { $in: ['insert', 'update', 'replace'] },
            },
          },
        ],
        { fullDocument: 'updateLookup' },
      );
      return followed(stream, handlers, 'change stream', (change) => {
        if (!('documentKey' in change)) return;
        const position = 'fullDocument' in change ? change.fullDocument?.position : undefined;
        handlers.commit(String(change.documentKey._id), typeof position === 'number' ? position : -1);
      });
    },
  };
}

/**
 * Every switch of the pointer (the `live` document of `_pulseboard_generations`), from a change stream as
 * above: serving processes read the pointer when it moves instead of every 200 ms. Each notice is
 * `commit('pointer', generation)`. The same stream carries the replay lock's lease (taken, renewed,
 * released) to `onReplayLock` (its end in ms, 0 once released), so users renew their announcements
 * only while a replay runs; a build's fence checks (`touchedAt`) are not sent.
 */
export function mongoPointerFeed(db: Db, onReplayLock: (expiresAt: number) => void = () => undefined): CommitFeed {
  return {
    open(handlers) {
      const stream = db
        .collection<{ _id: string; generation?: unknown; expiresAt?: unknown }>(GENERATIONS_COLLECTION)
        .watch(
          [
            {
              $match: {
                $or: [
                  { 'documentKey._id': 'live', operationType: { $in: ['insert', 'update', 'replace'] } },
                  { 'documentKey._id': 'replay-lock', operationType: { $in: ['insert', 'replace', 'delete'] } },
                  { 'documentKey._id': 'replay-lock', 'updateDescription.updatedFields.expiresAt': { $exists: true } },
                ],
              },
            },
          ],
          { fullDocument: 'updateLookup' },
        );
      return followed(stream, handlers, 'pointer change stream', (change) => {
        const document = 'fullDocument' in change ? change.fullDocument : undefined;
        if ('documentKey' in change && change.documentKey._id === 'replay-lock') {
          const expiresAt = document?.expiresAt;
          onReplayLock(change.operationType !== 'delete' && expiresAt instanceof Date ? expiresAt.getTime() : 0);
          return;
        }
        const generation = document?.generation;
        handlers.commit('pointer', typeof generation === 'number' ? generation : -1);
      });
    },
  };
}

/** A change stream as a feed: live once the server reports its first resume token, failed on error or close. */
function followed<T extends Document>(
  stream: ChangeStream<T>,
  handlers: Parameters<CommitFeed['open']>[0],
  what: string,
  onChange: (change: ChangeStreamDocument<T>) => void,
): ReturnType<CommitFeed['open']> {
  let live = false;
  stream.on('resumeTokenChanged', () => {
    if (live) return;
    live = true;
    handlers.live();
  });
  stream.on('change', onChange);
  stream.on('error', (error) => handlers.failed(error));
  stream.on('close', () => handlers.failed(new Error(`the MongoDB ${what} closed`)));
  return {
    async close() {
      stream.removeAllListeners();
      await stream.close();
    },
  };
}
