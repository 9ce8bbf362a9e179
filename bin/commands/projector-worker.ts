/**
 * The projectors of `pulseboard serve`, in a worker thread of their own. The embedded stores answer
 * synchronously, so a catch-up in the serving thread would hold its event loop until the backlog is
 * folded: nothing, not even /healthz, would be answered. Here the catch-up holds only this thread.
 * Each projector runs under the supervisor; every state change is posted to the serving thread, which
 * reports it in /readyz. The serving thread posts 'stop' to end it.
 */
import { parentPort } from 'node:worker_threads';
import { loadConfig } from '../../config/config.ts';
import { projectors } from '../../projectors/registry.ts';
import { createSupervisor } from '../../service/background.ts';
import { openStores } from '../../service/stores.ts';
import type { WorkerMessage } from './projector-thread.ts';

const port = parentPort;
if (!port) throw new Error('projector-worker.ts runs as a worker thread of pulseboard serve');
const post = (message: WorkerMessage) => port.postMessage(message);

const stop = new AbortController();
port.on('message', (message: unknown) => {
  if (message === 'stop') stop.abort();
});

const stores = await openStores(loadConfig());
stores.commits.subscribe((collection, checkpoint) => post({ kind: 'committed', collection, checkpoint }));
try {
  const supervisor = createSupervisor({ signal: stop.signal, onChange: (name, status) => post({ kind: 'status', name, status }) });
  await Promise.all(
    stores.runners.map((runner, i) => supervisor.supervise(`projector:${projectors[i]!.collection}`, (signal) => runner.run(signal))),
  );
} finally {
  await stores.close();
  port.close();
}
