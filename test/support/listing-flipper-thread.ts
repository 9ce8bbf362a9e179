/**
 * A worker thread that flips the listing of test/support/flipping-listing.ts between its two states
 * in the SQLite read store at `path`, one commit each, through a connection of its own, until the
 * parent sets `stop[0]`; then posts how many commits it made.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { listingWrites } from './flipping-listing.ts';

const { path, collection, stop, firstSeq } = workerData as {
  path: string;
  collection: string;
  stop: Int32Array;
  firstSeq: number;
};
const store = createSqliteReadStore(path);
let seq = firstSeq;
let commits = 0;
while (Atomics.load(stop, 0) === 0) {
  seq += 1;
  const outcome = await store.commit(collection, listingWrites(commits % 2 === 0 ? 1 : 0, seq), seq);
  if (!outcome.ok) throw new Error(`commit refused: ${outcome.reason}`);
  commits += 1;
}
// Ends in state 0 or 1; the parent reads neither after this.
await store.close();
parentPort!.postMessage({ commits });
