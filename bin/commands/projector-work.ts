import type { MessagePort } from 'node:worker_threads';
import { projectors } from '../../projectors/registry.ts';
import { createSupervisor, type LoopStatus } from '../../service/background.ts';
import type { Stores } from '../../service/stores.ts';
import type { WorkerMessage } from './projector-thread.ts';

/**
 * The projector worker's body (projector-worker.ts runs it in its thread; tests run it over stand-in
 * stores). 'stop' asks the runners to finish their batch. 'abort' comes when they did not in time:
 * the stores are closed at once, which aborts a MongoDB transaction under way (left open, it would
 * lock the checkpoint, counter and chunk documents for MongoDB's 60 s), and the thread exits.
 */
export async function runProjectorWork(
  port: Pick<MessagePort, 'on' | 'postMessage' | 'close'>,
  open: () => Promise<Stores>,
  exit = () => process.exit(0),
): Promise<void> {
  const post = (message: WorkerMessage) => port.postMessage(message);
  const stop = new AbortController();
  let stores: Stores | undefined;
  let aborting = false;
  port.on('message', (message: unknown) => {
    if (message === 'stop') stop.abort();
    if (message !== 'abort' || aborting) return;
    aborting = true;
    stop.abort();
    void (stores ? stores.close() : Promise.resolve()).catch(() => undefined).finally(exit);
  });
  stores = await open();
  if (aborting) {
    await stores.close().catch(() => undefined);
    return;
  }
  stores.commits.subscribe((collection, checkpoint) => post({ kind: 'committed', collection, checkpoint }));
  try {
    const onChange = (name: string, status: LoopStatus) => post({ kind: 'status', name, status });
    const supervisor = createSupervisor({ signal: stop.signal, onChange });
    await Promise.all(
      stores.runners.map((runner, i) =>
        supervisor.supervise(`projector:${projectors[i]!.collection}`, (signal) => runner.run(signal)),
      ),
    );
  } finally {
    if (!aborting) {
      await stores.close();
      port.close();
    }
  }
}
