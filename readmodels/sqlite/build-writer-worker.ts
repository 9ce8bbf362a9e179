/**
 * The thread of a build writer (build-writer.ts): its own connection to a replay's new generation,
 * writing the commits whose rows the store's thread makes, one after another, in the order they come.
 */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { namedSqliteError } from '../../config/sqlite.ts';
import { StorageFaultError } from '../../config/storage-fault.ts';
import type { BuildWriterData, WriterReply, WriterRequest } from './build-writer.ts';
import { createChunkIndex } from './list-chunks.ts';
import { createSqliteCommitter, type CommitSession } from './sqlite-commit.ts';
import { createSqliteHistory, type HistoryCommit } from './sqlite-history.ts';
import { statementCache } from './statement-cache.ts';

const port = parentPort;
if (!port) throw new Error('build-writer-worker.ts runs as a worker thread of a SQLite build store');
const { path, pragmas } = workerData as BuildWriterData;

const db = new DatabaseSync(path);
for (const pragma of pragmas) db.exec(pragma);
const prepare = statementCache(db);
const history = createSqliteHistory(db, prepare);
const committer = createSqliteCommitter(db, prepare, history, createChunkIndex(prepare));

/** What ended the commit under way, so its later parts are passed over until its end. */
let failure: unknown = null;
let session: CommitSession | null = null;
/** Whether the commit under way records versions staged before it. */
let sessionStaged = false;
/**
 * Each collection's versions staged for its next commit, written in one transaction kept open between
 * commits (one per part would write the indexes' pages again each time), and what failed writing them.
 */
const staged = new Map<string, { recording: HistoryCommit; failure: unknown }>();

const reply = (message: WriterReply) => port.postMessage(message);
const failed = (raw: unknown): WriterReply => {
  // A failure met while staging versions or ending their transaction comes raw from node:sqlite.
  const error = namedSqliteError(path, raw);
  return {
    kind: 'failed',
    error: {
      message: error instanceof Error ? error.message : String(error),
      name: error instanceof Error ? error.name : 'Error',
      fault: error instanceof StorageFaultError ? { kind: error.kind, detail: error.detail } : null,
    },
  };
};

port.on('message', (message: WriterRequest) => {
  try {
    switch (message.kind) {
      case 'stage': {
        let entry = staged.get(message.collection);
        if (!entry)
          staged.set(message.collection, (entry = { recording: history.open(message.collection), failure: null }));
        if (entry.failure !== null || message.part.kind !== 'versions') return;
        try {
          if (!db.isTransaction) db.exec('BEGIN IMMEDIATE');
          entry.recording.add(message.part.rows);
        } catch (error) {
          entry.failure = error;
        }
        return;
      }
      case 'open': {
        const entry = staged.get(message.request.collection);
        staged.delete(message.request.collection);
        // The staged versions' transaction ends before the commit's own (their recording goes on in it).
        if (db.isTransaction) db.exec('COMMIT');
        failure = entry?.failure ?? null;
        sessionStaged = entry !== undefined;
        session = committer.open(message.request, entry?.recording);
        return;
      }
      case 'part':
        if (failure === null) session!.add(message.part);
        return;
      case 'abort':
        if (failure === null) session!.abort(null);
        session = null;
        return reply({ kind: 'aborted' });
      case 'end': {
        const ending = session;
        session = null;
        if (failure !== null) return reply(failed(ending?.abort(failure) ?? failure));
        try {
          const outcome = ending!.end();
          // A build has one writer: versions staged for a commit that is then refused leave its history incomplete.
          if (!outcome.ok && sessionStaged)
            throw new Error('a build commit was refused after its versions were staged');
          return reply({ kind: 'ended', outcome });
        } catch (error) {
          return reply(failed(error));
        }
      }
      case 'close':
        db.close();
        port.close();
        return;
    }
  } catch (error) {
    // The session rolled back what it had begun; the commit's end reports why.
    failure = error;
  }
});
