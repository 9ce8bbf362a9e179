/**
 * The thread of a build writer (build-writer.ts): its own connection to a replay's new generation,
 * writing the commits whose rows the store's thread makes, one after another, in the order they come.
 */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { StorageFaultError } from '../../config/storage-fault.ts';
import type { BuildWriterData, WriterReply, WriterRequest } from './build-writer.ts';
import { createChunkIndex } from './list-chunks.ts';
import { createSqliteCommitter, type CommitSession } from './sqlite-commit.ts';
import { createSqliteHistory } from './sqlite-history.ts';
import { statementCache } from './statement-cache.ts';

const port = parentPort;
if (!port) throw new Error('build-writer-worker.ts runs as a worker thread of a SQLite build store');
const { path, pragmas } = workerData as BuildWriterData;

const db = new DatabaseSync(path);
for (const pragma of pragmas) db.exec(pragma);
const prepare = statementCache(db);
const committer = createSqliteCommitter(db, prepare, createSqliteHistory(db, prepare), createChunkIndex(prepare));

/** What ended the commit under way, so its later parts are passed over until its end. */
let failure: unknown = null;
let session: CommitSession | null = null;

const reply = (message: WriterReply) => port.postMessage(message);
const failed = (error: unknown): WriterReply => ({
  kind: 'failed',
  error: {
    message: error instanceof Error ? error.message : String(error),
    name: error instanceof Error ? error.name : 'Error',
    fault: error instanceof StorageFaultError ? error.kind : null,
  },
});

port.on('message', (message: WriterRequest) => {
  try {
    switch (message.kind) {
      case 'open':
        failure = null;
        session = committer.open(message.request);
        return;
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
        if (failure !== null) return reply(failed(failure));
        try {
          return reply({ kind: 'ended', outcome: ending!.end() });
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
