/**
 * A board page and its total come from one snapshot of the SQLite read store while another
 * connection commits (the projectors' worker thread does, beside every API process): a page read
 * across a commit is one state's slice with that state's total, never the counts of one state and
 * the rows of the next (a page from the end placed by the old total, a chunk walk from before the
 * commit and rows from after it).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { it } from 'vitest';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { expectedPage, listingWrites, type ListingState } from '../support/flipping-listing.ts';

/** Offsets of facet `a`'s pages read from the front or the end, through the chunks or not, in one state or the other. */
const OFFSETS = [1200, 2600, 3400, 4900, 5900];
const LIMIT = 50;
/** Reads that overlapped a commit, at least: fewer and the test has not tested what it says. */
const OVERLAPPING_READS = 800;
const MAX_SECONDS = 60;

it('pages read while another connection commits are each one snapshot: its rows and its total', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-list-snapshot-'));
  const path = join(dir, 'readmodels.sqlite');
  const store = createSqliteReadStore(path);
  const watcher = new DatabaseSync(path, { readOnly: true });
  const stop = new Int32Array(new SharedArrayBuffer(4));
  let worker: Worker | undefined;
  try {
    await store.commit('projects', listingWrites(0, 1, true), 1);
    const expected = (state: ListingState) =>
      new Map(OFFSETS.map((offset) => [offset, expectedPage(state, offset, LIMIT)]));
    const states = [expected(0), expected(1)];
    // Each connection's data_version moves when another connection commits: a read it saw move overlapped a commit.
    const version = watcher.prepare('PRAGMA data_version');
    const dataVersion = () => (version.get() as { data_version: number }).data_version;

    worker = new Worker(new URL('../support/listing-flipper-thread.ts', import.meta.url), {
      workerData: { path, collection: 'projects', stop, firstSeq: 1 },
    });
    const finished = new Promise<{ commits: number }>((resolve, reject) => {
      worker!.once('message', resolve);
      worker!.once('error', reject);
    });
    let overlapping = 0;
    let reads = 0;
    const mixed: string[] = [];
    const deadline = Date.now() + MAX_SECONDS * 1000;
    while (overlapping < OVERLAPPING_READS && Date.now() < deadline) {
      for (const offset of OFFSETS) {
        const before = dataVersion();
        const page = await store.list('projects', { facets: ['a'], offset, limit: LIMIT });
        if (dataVersion() !== before) overlapping += 1;
        reads += 1;
        const got = { total: page.total, ids: page.docs.map((d) => d.id) };
        if (!states.some((state) => JSON.stringify(state.get(offset)) === JSON.stringify(got))) {
          mixed.push(`offset ${offset}: total ${got.total}, ids ${got.ids[0]}…${got.ids.at(-1)}`);
        }
      }
    }
    Atomics.store(stop, 0, 1);
    const { commits } = await finished;
    assert.deepEqual(
      mixed.slice(0, 5),
      [],
      `${mixed.length} of ${reads} reads mixed two states (${overlapping} overlapped a commit)`,
    );
    assert.ok(
      overlapping >= OVERLAPPING_READS,
      `only ${overlapping} of ${reads} reads overlapped one of ${commits} commits in ${MAX_SECONDS} s`,
    );
  } finally {
    Atomics.store(stop, 0, 1);
    await worker?.terminate();
    watcher.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
