import { Worker } from 'node:worker_threads';
import { StorageFaultError, type StorageFaultKind } from '../../config/storage-fault.ts';
import { workerReplies } from '../../config/worker-thread.ts';
import type { CommitOutcome } from '../port.ts';
import type { CommitPart } from './commit-rows.ts';
import type { CommitRequest } from './sqlite-commit.ts';

/**
 * The commits of a replay's new generation (a `bulkBuild` store), written by a thread of their own: the
 * store's thread makes each commit's rows (its texts) and hands them over part by part, and folds the
 * next batch while this thread writes them (projectors/runner.ts overlaps a commit with the next batch).
 * Nobody reads a generation before the switch, so the two connections never contend for its file except
 * for the store's own reads, which wait until the commits asked for before them are written.
 */
export type BuildWriter = {
  /** Writes a commit; its parts are made (and handed over) before this returns its promise. */
  commit(request: CommitRequest, parts: Iterable<CommitPart>): Promise<CommitOutcome>;
  /**
   * Writes versions staged ahead of the collection's next commit (ReadStore.stageVersions), which records
   * them with its own; a failure to write them fails that commit.
   */
  stage(collection: string, parts: Iterable<CommitPart>): void;
  /** Resolves once every commit asked for so far has ended. */
  idle(): Promise<void>;
  /** Ends the thread and its connection once the commits asked for have ended. */
  close(): Promise<void>;
};

export type BuildWriterData = { path: string; pragmas: string[] };

export type WriterRequest =
  | { kind: 'open'; request: CommitRequest }
  | { kind: 'part'; part: CommitPart }
  | { kind: 'stage'; collection: string; part: CommitPart }
  | { kind: 'abort' }
  | { kind: 'end' }
  | { kind: 'close' };

export type WriterReply =
  | { kind: 'ended'; outcome: CommitOutcome }
  | { kind: 'aborted' }
  | {
      kind: 'failed';
      error: { message: string; name: string; fault: { kind: StorageFaultKind; detail: string } | null };
    };

/** `pragmas`: the connection's settings, run first (the store's own for a build: no journal, no sync). */
export function startBuildWriter(path: string, pragmas: string[]): BuildWriter {
  const worker = new Worker(new URL('./build-writer-worker.ts', import.meta.url), {
    workerData: { path, pragmas } satisfies BuildWriterData,
  });
  worker.unref();
  // Each commit is answered by one reply, in order; the thread holds the process open only while one is due.
  const replies = workerReplies<WriterReply>(
    worker,
    (code) => new Error(`the build writer's thread exited (${code})`),
    () => worker.unref(),
  );
  const outcome = (reply: WriterReply, cause: unknown): CommitOutcome => {
    if (reply.kind === 'ended') return reply.outcome;
    if (reply.kind === 'aborted') throw cause;
    const { message, name, fault } = reply.error;
    // A fault is rebuilt from its detail: its message already starts with the headline the constructor adds.
    throw fault ? new StorageFaultError(fault.kind, fault.detail) : Object.assign(new Error(message), { name });
  };

  const post = (message: WriterRequest) => worker.postMessage(message);

  return {
    commit(request, parts) {
      const gone = replies.gone();
      if (gone) return Promise.reject(gone);
      let cause: unknown;
      const outcomeOf = replies.expect((answer) => outcome(answer, cause));
      worker.ref();
      post({ kind: 'open', request });
      try {
        for (const part of parts) post({ kind: 'part', part });
        post({ kind: 'end' });
      } catch (error) {
        // A part that could not be made (a document that is not JSON): nothing of the commit is written.
        cause = error;
        post({ kind: 'abort' });
      }
      return outcomeOf;
    },

    stage(collection, parts) {
      const gone = replies.gone();
      if (gone) throw gone;
      for (const part of parts) post({ kind: 'stage', collection, part });
    },

    idle: () => replies.idle(),

    async close() {
      await this.idle();
      if (replies.gone()) return;
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.ref();
      post({ kind: 'close' });
      await exited;
    },
  };
}
