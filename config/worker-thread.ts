/**
 * The parent's side of a worker thread, for every thread pulseboard starts (the SQLite mirror's, a
 * replay's build writer, the projectors', the as-of export's): how its end is told, and the replies
 * of a thread that answers its requests one by one.
 */
import type { Worker } from 'node:worker_threads';

/**
 * Calls `ended` once the thread has exited, with the error it failed with (uncaught, or out of its
 * heap; an 'error' event is always followed by 'exit'), or null when it ended by itself.
 */
export function onWorkerEnd(worker: Worker, ended: (failure: Error | null, code: number) => void): void {
  let failure: Error | null = null;
  worker.on('error', (error) => {
    failure ??= error;
  });
  worker.on('exit', (code) => ended(failure, code));
}

export type WorkerReplies<R> = {
  /**
   * The next reply not yet expected, through `read` (which may throw) as it arrives, so whoever
   * awaits it hears before whoever awaits idle(); rejects with why once the thread has ended.
   */
  expect<T = R>(read?: (reply: R) => T): Promise<T>;
  /** How many replies are expected and have not come. */
  pending(): number;
  /** Resolves once every reply expected so far has come, or failed. */
  idle(): Promise<void>;
  /** Why the thread ended, or null while it runs. */
  gone(): Error | null;
};

/**
 * The replies of a thread that answers its requests in the order they came: each message it posts
 * answers the oldest request still waiting. `onIdle` hears each time none is left waiting.
 */
export function workerReplies<R>(
  worker: Worker,
  endedWith: (code: number) => Error,
  onIdle?: () => void,
): WorkerReplies<R> {
  const waiting: {
    read: (reply: R) => unknown;
    resolve: (value: unknown) => void;
    reject: (error: unknown) => void;
  }[] = [];
  let idle: { promise: Promise<void>; resolve: () => void } | null = null;
  let gone: Error | null = null;
  const settle = () => {
    if (waiting.length > 0) return;
    onIdle?.();
    idle?.resolve();
    idle = null;
  };
  worker.on('message', (reply: R) => {
    const next = waiting.shift();
    if (next) {
      try {
        next.resolve(next.read(reply));
      } catch (error) {
        next.reject(error);
      }
    }
    settle();
  });
  onWorkerEnd(worker, (failure, code) => {
    gone = failure ?? endedWith(code);
    for (const next of waiting.splice(0)) next.reject(gone);
    settle();
  });
  return {
    expect<T = R>(read?: (reply: R) => T): Promise<T> {
      if (gone) return Promise.reject(gone);
      return new Promise<T>((resolve, reject) => {
        waiting.push({ read: read ?? ((reply) => reply), resolve: resolve as (value: unknown) => void, reject });
      });
    },
    pending: () => waiting.length,
    idle() {
      if (waiting.length === 0) return Promise.resolve();
      if (!idle) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        idle = { promise, resolve };
      }
      return idle.promise;
    },
    gone: () => gone,
  };
}
