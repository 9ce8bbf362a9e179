/**
 * The thread of sqlite-thread.ts: opens the SQLite mirror it is handed and carries out each request
 * in the order it came, answering with its id.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteMirror } from './sqlite.ts';
import type { MirrorStore } from './store.ts';
import type { ThreadAnswer, ThreadRequest } from './sqlite-thread.ts';

const port = parentPort!;
const answer = (message: ThreadAnswer) => port.postMessage(message);
const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));

let store: MirrorStore | null = null;
try {
  store = openSqliteMirror((workerData as { file: string }).file);
  answer({ id: 0, ok: true, value: null });
} catch (error) {
  answer({ id: 0, ok: false, message: reason(error) });
}

if (store) {
  const open = store;
  // Requests are handled one at a time, in order: a commit's `from` is the state the one before left.
  let queue = Promise.resolve();
  port.on('message', (request: ThreadRequest) => {
    queue = queue.then(async () => {
      try {
        if (request.op === 'state') answer({ id: request.id, ok: true, value: await open.state() });
        else if (request.op === 'commit')
          answer({
            id: request.id,
            ok: true,
            value: await open.commit(request.from, request.rows, request.cursor, request.source),
          });
        else {
          await open.close();
          answer({ id: request.id, ok: true, value: null });
          port.close();
        }
      } catch (error) {
        answer({ id: request.id, ok: false, message: reason(error) });
      }
    });
  });
}
