import { Worker } from 'node:worker_threads';
import type { LoopStatus } from '../../service/background.ts';

/** What the projector worker posts to the serving thread. */
export type WorkerMessage = { kind: 'status'; name: string; status: LoopStatus };

export type ProjectorThread = {
  /** Runs the worker until it ends; rejects when it fails (a supervised loop of the serving thread). */
  run(signal: AbortSignal): Promise<void>;
  /** The worker's projectors and their states, as last posted (empty while no worker runs). */
  status(): Record<string, LoopStatus>;
};

/** How long a stopping worker may take to finish its batch before it is terminated. */
const STOP_GRACE_MS = 5_000;

/**
 * The projectors in a worker thread (see projector-worker.ts). A worker that stops is an ordinary
 * failure of this loop, so the serving thread's supervisor restarts it with backoff. On stop the worker
 * is asked to finish its batch; one that is still catching up (its thread busy folding) is terminated
 * after a grace period, which is harmless: each batch commits documents and checkpoint together.
 */
export function createProjectorThread(): ProjectorThread {
  let states: Record<string, LoopStatus> = {};

  return {
    status: () => states,

    run(signal) {
      return new Promise<void>((resolve, reject) => {
        const worker = new Worker(new URL('./projector-worker.ts', import.meta.url));
        let grace: NodeJS.Timeout | null = null;
        const onAbort = () => {
          worker.postMessage('stop');
          grace = setTimeout(() => void worker.terminate(), STOP_GRACE_MS);
        };
        let failure: unknown = null;
        worker.on('message', (message: WorkerMessage) => {
          if (message.kind === 'status') states = { ...states, [message.name]: message.status };
        });
        worker.on('error', (error) => {
          failure = error;
        });
        worker.on('exit', (code) => {
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
