/**
 * Every commit of every process, from PostgreSQL itself: the process's one listening connection
 * (config/postgres-listener.ts) LISTENs on the channel each commit NOTIFYs inside its transaction
 * (postgres-commit.ts), so the notice arrives once the commit is visible, and never for one rolled
 * back. Live once LISTEN has returned; a lost connection ends the feed, and commit-signal.ts opens a
 * new one after a backoff (waiters poll meanwhile). Commits made while no connection listened are not
 * told again: the waiters' poll on reconnecting covers them, as for MongoDB's change stream.
 */
import { listen } from '../../config/postgres-listener.ts';
import type { CommitFeed } from '../commit-signal.ts';
import { COMMIT_CHANNEL, type CommitNotice } from './postgres-commit.ts';

function parseNotice(payload: string | undefined): CommitNotice | null {
  try {
    const notice = JSON.parse(payload ?? '') as Partial<CommitNotice>;
    if (typeof notice.collection !== 'string') return null;
    return {
      generation: typeof notice.generation === 'number' ? notice.generation : -1,
      collection: notice.collection,
      checkpoint: typeof notice.checkpoint === 'number' ? notice.checkpoint : -1,
    };
  } catch {
    return null;
  }
}

export function postgresCommitFeed(url: string): CommitFeed {
  return {
    open(handlers) {
      return listen(url, COMMIT_CHANNEL, {
        live: () => handlers.live(),
        notify(payload) {
          const notice = parseNotice(payload);
          if (notice) handlers.commit(notice.collection, notice.checkpoint);
        },
        failed: (error) => handlers.failed(error),
      });
    },
  };
}
