import { Worker } from 'node:worker_threads';
import { workerReplies } from '../../config/worker-thread.ts';
import type { CommitResult, MirrorRow, MirrorState, MirrorStore } from './store.ts';

/**
 * The SQLite mirror (sqlite.ts) on a thread of its own (sqlite-thread-worker.ts): node:sqlite blocks
 * the thread it runs on, and there its upserts overlap the client's reading of the next pages.
 */
export type ThreadRequest =
  | { id: number; op: 'state' }
  | { id: number; op: 'commit'; from: MirrorState; rows: MirrorRow[]; cursor: string; source: string }
  | { id: number; op: 'close' };

/** Id 0 answers the opening of the store; every other id the request of that id, in the order asked. */
export type ThreadAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

const OPENED = 0;

export async function openSqliteMirrorThread(
  file: string,
  workerUrl = new URL('./sqlite-thread-worker.ts', import.meta.url),
): Promise<MirrorStore> {
  const worker = new Worker(workerUrl, { workerData: { file } });
  // Once the thread is gone every request still waiting, and every later one, fails with why.
  const replies = workerReplies<ThreadAnswer>(worker, () => new Error('the SQLite thread ended'));
  const value = (reply: ThreadAnswer): unknown => {
    if (!reply.ok) throw new Error(reply.message);
    return reply.value;
  };
  let next = OPENED + 1;
  const request = <T>(build: (id: number) => ThreadRequest): Promise<T> => {
    const answer = replies.expect(value);
    if (!replies.gone()) worker.postMessage(build(next++));
    return answer as Promise<T>;
  };

  try {
    await replies.expect(value);
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  return {
    name: `sqlite:${file}`,
    state: () => request<MirrorState>((id) => ({ id, op: 'state' })),
    commit: (from, rows, cursor, source) =>
      request<CommitResult>((id) => ({ id, op: 'commit', from, rows, cursor, source })),
    async close() {
      if (!replies.gone()) await request((id) => ({ id, op: 'close' }));
      await worker.terminate();
    },
  };
}
