import { Worker } from 'node:worker_threads';
import type { CommitResult, MirrorRow, MirrorState, MirrorStore } from './store.ts';

/**
 * The SQLite mirror (sqlite.ts) on a thread of its own (sqlite-thread-worker.ts): node:sqlite blocks
 * the thread it runs on, and there its upserts overlap the client's reading of the next pages.
 */
export type ThreadRequest =
  | { id: number; op: 'state' }
  | { id: number; op: 'commit'; from: MirrorState; rows: MirrorRow[]; cursor: string; source: string }
  | { id: number; op: 'close' };

/** Id 0 answers the opening of the store; every other id the request of that id. */
export type ThreadAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

const OPENED = 0;

export async function openSqliteMirrorThread(
  file: string,
  workerUrl = new URL('./sqlite-thread-worker.ts', import.meta.url),
): Promise<MirrorStore> {
  const worker = new Worker(workerUrl, { workerData: { file } });
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let next = OPENED + 1;
  // Once the thread is gone every request still waiting, and every later one, fails with why.
  let gone: Error | null = null;
  const end = (error: Error) => {
    gone ??= error;
    for (const w of waiting.values()) w.reject(gone);
    waiting.clear();
  };
  worker.on('error', end);
  worker.on('exit', () => end(new Error('the SQLite thread ended')));
  worker.on('message', (answer: ThreadAnswer) => {
    const w = waiting.get(answer.id);
    waiting.delete(answer.id);
    if (answer.ok) w?.resolve(answer.value);
    else w?.reject(new Error(answer.message));
  });
  const request = <T>(build: (id: number) => ThreadRequest): Promise<T> =>
    new Promise<unknown>((resolve, reject) => {
      if (gone) return reject(gone);
      const message = build(next++);
      waiting.set(message.id, { resolve, reject });
      worker.postMessage(message);
    }) as Promise<T>;

  try {
    await new Promise((resolve, reject) => waiting.set(OPENED, { resolve, reject }));
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
      if (!gone) await request((id) => ({ id, op: 'close' }));
      await worker.terminate();
    },
  };
}
