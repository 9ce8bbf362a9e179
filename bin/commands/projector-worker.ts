/**
 * The projectors of `pulseboard serve`, in a worker thread of their own. The embedded stores answer
 * synchronously, so a catch-up in the serving thread would hold its event loop until the backlog is
 * folded: nothing, not even /healthz, would be answered. Here the catch-up holds only this thread.
 * Each projector runs under the supervisor; every state change is posted to the serving thread, which
 * reports it in /readyz. The serving thread posts 'stop' to end it, then 'abort' (projector-work.ts).
 */
import { parentPort } from 'node:worker_threads';
import { loadConfig } from '../../config/config.ts';
import { openStores } from '../../service/stores.ts';
import { runProjectorWork } from './projector-work.ts';

const port = parentPort;
if (!port) throw new Error('projector-worker.ts runs as a worker thread of pulseboard serve');
await runProjectorWork(port, () => openStores(loadConfig()));
