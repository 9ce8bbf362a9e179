import type { DatabaseSync } from 'node:sqlite';
import { beginTransaction } from '../../config/sqlite.ts';
import type { CommitOutcome } from '../port.ts';
import type { CommitPart } from './commit-rows.ts';
import type { ChunkIndex } from './list-chunks.ts';
import type { HistoryCommit, SqliteHistory } from './sqlite-history.ts';
import type { Prepare } from './statement-cache.ts';

/** A commit as the SQLite store writes it: its parts (commit-rows.ts) come after this. */
export type CommitRequest = {
  collection: string;
  checkpoint: number;
  /** The compare-and-set: the commit applies only if the stored checkpoint is this. */
  expected: number | undefined;
};

/**
 * A commit's transaction while its parts come: `add` each, then `end` (which commits); `abort` rolls back
 * what is still open and gives the error to throw.
 */
export type CommitSession = { add(part: CommitPart): void; end(): CommitOutcome; abort(error: unknown): unknown };

export type SqliteCommitter = {
  /**
   * Begins a commit's transaction. A session whose checkpoint had moved is refused at once (rolled
   * back): its parts are ignored and `end` says so. A failing part rolls the transaction back and throws.
   * `recording`: the collection's versions recorded so far (a build's, staged before its commit).
   */
  open(request: CommitRequest, recording?: HistoryCommit): CommitSession;
  /** A whole commit in one call. */
  commit(request: CommitRequest, parts: Iterable<CommitPart>): CommitOutcome;
};

/** The write half of the SQLite read store, on one connection (the store's own, or a build writer's). */
export function createSqliteCommitter(
  db: DatabaseSync,
  prepare: Prepare,
  history: SqliteHistory,
  chunks: Pick<ChunkIndex, 'cutFullChunks'>,
): SqliteCommitter {
  const upsert = prepare(`
    INSERT INTO docs (collection, id, doc, state, seq, written_at, sort_key, facet, keys)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (collection, id) DO UPDATE SET doc = excluded.doc, state = excluded.state, seq = excluded.seq,
      written_at = excluded.written_at, sort_key = excluded.sort_key, facet = excluded.facet, keys = excluded.keys`);
  const setCheckpoint = prepare(
    'INSERT INTO checkpoints (collection, position) VALUES (?, ?) ON CONFLICT (collection) DO UPDATE SET position = excluded.position',
  );
  const getCheckpoint = prepare('SELECT position FROM checkpoints WHERE collection = ?');

  function open(request: CommitRequest, staged?: HistoryCommit): CommitSession {
    const { collection } = request;
    const transaction = beginTransaction(db);
    let live = true;
    const abort = (error: unknown): unknown => {
      if (!live) return error;
      live = false;
      return transaction.abort(error);
    };
    let recording: HistoryCommit;
    try {
      if (request.expected !== undefined) {
        const actual = (getCheckpoint.get(collection) as { position: number } | undefined)?.position ?? 0;
        if (actual !== request.expected) {
          abort(null);
          const refused: CommitOutcome = { ok: false, reason: 'checkpoint_moved', actual };
          return { add: () => undefined, end: () => refused, abort: (error) => error };
        }
      }
      recording = staged ?? history.open(collection);
    } catch (error) {
      throw abort(error);
    }
    return {
      add(part) {
        try {
          if (part.kind === 'versions') recording.add(part.rows);
          else
            for (const [id, doc, state, seq, writtenAt, sortKey, facet, keys] of part.rows)
              // Lookup keys follow from `keys` (KEY_TRIGGERS in sqlite-layout.ts).
              upsert.run(collection, id, doc, state, seq, writtenAt, sortKey, facet, keys);
        } catch (error) {
          throw abort(error);
        }
      },
      end() {
        try {
          recording.end();
          chunks.cutFullChunks(collection);
          setCheckpoint.run(collection, request.checkpoint);
          transaction.commit();
          live = false;
          return { ok: true };
        } catch (error) {
          throw abort(error);
        }
      },
      abort,
    };
  }

  return {
    open,
    commit(request, parts) {
      const session = open(request);
      try {
        for (const part of parts) session.add(part);
      } catch (error) {
        // A part that could not be made (a document that is not JSON) ends the transaction too.
        throw session.abort(error);
      }
      return session.end();
    },
  };
}
