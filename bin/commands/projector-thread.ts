import { Worker } from 'node:worker_threads';
import { onWorkerEnd } from '../../config/worker-thread.ts';
import type { LoopStatus } from '../../service/background.ts';

/** What the projector worker posts to the serving thread. */
export type WorkerMessage =
  | { kind: 'status'; name: string; status: LoopStatus }
  /** A commit that applied: what wakes the serving thread's long-polls and change streams. */
  | { kind: 'committed'; collection: string; checkpoint: number };

export type ProjectorThread = {
  /** Runs the worker until it ends; rejects when it fails (a supervised loop of the serving thread). */
  run(signal: AbortSignal): Promise<void>;
  /** The worker's projectors and their states, as last posted (empty while no worker runs). */
  status(): Record<string, LoopStatus>;
};

/**
 * The worker's V8 old generation, in MB. Unbounded, it is V8's default for the machine (4 GB on a
 * 24 GB host), and the runner's heap guard (commit once the heap is half full, projectors/runner.ts)
 * then lets a catch-up hold about 2 GB of pending documents beside the serving thread. With this
 * bound the guard commits at about 512 MB; a worker that still runs out is restarted by the
 * supervisor and resumes from its last commit (issue 12).
 */
export const WORKER_MAX_OLD_GENERATION_MB = 1024;

/** How long a stopping worker may take to finish its batch before it is told to abort. */
const STOP_GRACE_MS = 5_000;
/** How long an aborting worker may take to abort its transactions and exit before it is terminated. */
const ABORT_GRACE_MS = 3_000;

export type ProjectorThreadOptions = {
  /** The worker module (tests pass stand-ins); by default projector-worker.ts. */
  workerUrl?: URL;
  /** Handed to the worker as its workerData (tests). */
  workerData?: unknown;
  stopGraceMs?: number;
  abortGraceMs?: number;
  /** Called with each state the worker posts, after it is recorded. */
  onChange?: (name: string, status: LoopStatus) => void;
  /** Called with each commit the worker's projectors made (collection, its new checkpoint). */
  onCommit?: (collection: string, checkpoint: number) => void;
};

/**
 * The projectors in a worker thread (see projector-worker.ts). A worker that stops is an ordinary
 * failure of this loop, so the serving thread's supervisor restarts it with backoff. On stop the worker
 * is asked to finish its batch; one that has not after a grace period is told to abort, which closes
 * its stores and so aborts a transaction under way (a worker terminated in the middle of a MongoDB
 * commit would leave its transaction holding locks for 60 s). One that does not exit then (its thread
 * busy folding, so nothing was under way in a transaction) is terminated, which is harmless: each
 * batch commits documents and checkpoint together.
 */
export function createProjectorThread(options: ProjectorThreadOptions = {}): ProjectorThread {
  const workerUrl = options.workerUrl ?? new URL('./projector-worker.ts', import.meta.url);
  const stopGraceMs = options.stopGraceMs ?? STOP_GRACE_MS;
  const abortGraceMs = options.abortGraceMs ?? ABORT_GRACE_MS;
  let states: Record<string, LoopStatus> = {};

  return {
    status: () => states,

    run(signal) {
      return new Promise<void>((resolve, reject) => {
        const worker = new Worker(workerUrl, {
          workerData: options.workerData,
          resourceLimits: { maxOldGenerationSizeMb: WORKER_MAX_OLD_GENERATION_MB },
        });
        let grace: NodeJS.Timeout | null = null;
        const onAbort = () => {
          worker.postMessage('stop');
          grace = setTimeout(() => {
            worker.postMessage('abort');
            grace = setTimeout(() => void worker.terminate(), abortGraceMs);
          }, stopGraceMs);
        };
        worker.on('message', (message: WorkerMessage) => {
          if (message.kind === 'committed') return options.onCommit?.(message.collection, message.checkpoint);
          if (message.kind !== 'status') return;
          states = { ...states, [message.name]: message.status };
          options.onChange?.(message.name, message.status);
        });
        onWorkerEnd(worker, (failure, code) => {
          signal.removeEventListener('abort', onAbort);
          if (grace) clearTimeout(grace);
          states = {};
          if (signal.aborted) return resolve();
          reject(failure ?? new Error(`projector worker exited with code ${code}`));
        });
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}
