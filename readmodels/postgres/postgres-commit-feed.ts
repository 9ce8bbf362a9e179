/**
 * Every commit of every process, from PostgreSQL itself: a connection of its own that LISTENs on the
 * channel each commit NOTIFYs inside its transaction (postgres-commit.ts), so the notice arrives once
 * the commit is visible, and never for one rolled back. Live once LISTEN has returned; a lost connection
 * (its 'error' or 'end') ends the feed, and commit-signal.ts opens a new one after a backoff (waiters
 * poll meanwhile). Commits made while no connection listened are not told again: the waiters' poll
 * on reconnecting covers them, as for MongoDB's change stream.
 */
import pg from 'pg';
import type { CommitFeed } from '../commit-signal.ts';
import { COMMIT_CHANNEL, type CommitNotice } from './postgres-commit.ts';
import { PostgresConnectionError } from './postgres-faults.ts';

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
      const client = new pg.Client({ connectionString: url, keepAlive: true, connectionTimeoutMillis: 10_000 });
      let ended = false;
      const fail = (error: unknown) => {
        if (ended) return;
        ended = true;
        handlers.failed(error);
        client.end().catch(() => undefined);
      };
      // Both stay attached until the end: an 'error' without a listener would end the process.
      client.on('error', fail);
      client.on('end', () => fail(new PostgresConnectionError('the PostgreSQL LISTEN connection closed')));
      client.on('notification', (message) => {
        if (ended || message.channel !== COMMIT_CHANNEL) return;
        const notice = parseNotice(message.payload);
        if (notice) handlers.commit(notice.collection, notice.checkpoint);
      });
      client
        .connect()
        .then(() => client.query(`LISTEN ${COMMIT_CHANNEL}`))
        .then(() => {
          if (!ended) handlers.live();
        }, fail);
      return {
        async close() {
          ended = true;
          await client.end().catch(() => undefined);
        },
      };
    },
  };
}
