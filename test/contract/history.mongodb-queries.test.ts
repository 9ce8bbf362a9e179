/**
 * The MongoDB history (readmodels/mongodb/mongodb-history.ts) on the in-memory driver stand-in, beyond
 * the contract: every read names an index matching its shape and is a range bounded on both sides (or
 * a walk along the index bounded by its limit), a commit with versions costs the same few calls at any
 * size, the upgrade paths of a store written before the history and of one with the versions' unused
 * time index, and a replay into a new generation writing the same history as a catch-up in small batches.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { PROJECT_FACETS, PROJECTS_COLLECTION, projectsProjector } from '../../projectors/projects.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { OPEN_END } from '../../readmodels/history/port.ts';
import {
  HISTORY_COUNTS,
  HISTORY_FROM,
  HISTORY_INDEXES,
  HISTORY_PLACEMENTS,
  HISTORY_SHARED,
  HISTORY_VERSIONS,
} from '../../readmodels/mongodb/mongodb-history-layout.ts';
import { generationOfCollection } from '../../readmodels/mongodb/mongodb-layout.ts';
import { mongoReadStoreOn } from '../../readmodels/mongodb/mongodb-read-store.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import { appendBoardHistory } from '../support/board-history.ts';
import { fakeMongo, type SentFind } from '../support/mongodb-fake.ts';
import { written } from './history.contract.ts';

const C = PROJECTS_COLLECTION;
const { dossier, noDossier } = PROJECT_FACETS;

/**
 * `n` projects written `times` times each from position `start` on; every third moves to the dossier facet
 * half way. With `shared`, each also carries a large member named as shared, changed every other write.
 */
function board(n: number, times: number, start: number, prefix = 'p', shared = false): DocWrite[] {
  return Array.from({ length: n }, (_, i) =>
    written(
      `${prefix}${String(i).padStart(5, '0')}`,
      Array.from({ length: times }, (_, k) => ({
        seq: start + k * n + i,
        sortKey: `k${String((i * 7919) % 997).padStart(4, '0')}`,
        facet: i % 3 === 0 && k >= times / 2 ? dossier : noDossier,
        ...(shared
          ? { doc: { i, k, big: { text: 'x'.repeat(300), half: Math.floor(k / 2) } }, sharedMember: 'big' }
          : { doc: { i, k } }),
      })),
    ),
  );
}

const INDEX_KEYS: Record<string, [string, number][]> = Object.fromEntries(
  Object.values(HISTORY_INDEXES).flatMap((specs) => specs.map((spec) => [spec.name, Object.entries(spec.key)])),
);
const baseName = (collection: string) => collection.replace(/_v[1-9]\d*$/, '');

const isEquality = (condition: unknown) =>
  typeof condition !== 'object' || condition === null || '$in' in (condition as object);
const hasLower = (condition: unknown) =>
  typeof condition === 'object' && condition !== null && ('$gt' in condition || '$gte' in condition);
const hasUpper = (condition: unknown) =>
  typeof condition === 'object' && condition !== null && ('$lt' in condition || '$lte' in condition);

/** Fields a filter tests, inside `$or` / `$and` too. */
const fieldsOf = (filter: Record<string, unknown>): string[] =>
  Object.entries(filter).flatMap(([field, condition]) =>
    field === '$or' || field === '$and' ? (condition as Record<string, unknown>[]).flatMap(fieldsOf) : [field],
  );

/**
 * Why a history query's shape does not fit its hinted index, or null: equality fields lead the index,
 * the sort (if any) follows it in one direction, every field tested is in the index (rows are fetched
 * only once they match), and the range is bounded on both sides: the first field past the equalities
 * has a lower and an upper bound, or the equalities leave only the last field open, or the query walks
 * the index in order up to a limit.
 */
function shapeProblem(find: SentFind): string | null {
  if (find.hint === undefined) return 'no hint';
  const keys: [string, number][] = find.hint === '_id_' ? [['_id', 1]] : (INDEX_KEYS[find.hint] ?? []);
  if (keys.length === 0) return `unknown index ${find.hint}`;
  const own = HISTORY_INDEXES[baseName(find.collection) as keyof typeof HISTORY_INDEXES];
  if (find.hint !== '_id_' && !own?.some((spec) => spec.name === find.hint))
    return `${find.hint} is not an index of ${find.collection}`;
  const names = keys.map(([field]) => field);
  const stray = fieldsOf(find.filter).filter((field) => !names.includes(field));
  if (stray.length > 0) return `tests ${stray.join()} outside the index`;
  const equal = Object.entries(find.filter)
    .filter(([field, condition]) => !field.startsWith('$') && isEquality(condition))
    .map(([field]) => field);
  const leading = names.slice(0, equal.length);
  if ([...leading].sort().join() !== [...equal].sort().join())
    return `equality on ${equal.join()}, index starts ${leading.join()}`;
  const rest = keys.slice(equal.length);
  if (find.sort.length > 0) {
    const flip = rest[0]?.[1] === find.sort[0]![1] ? 1 : -1;
    const along = find.sort.every(
      ([field, direction], i) => rest[i]?.[0] === field && rest[i]![1] * flip === direction,
    );
    if (!along) return `sort ${JSON.stringify(find.sort)}, index continues ${JSON.stringify(rest)}`;
  }
  const next = rest[0]?.[0];
  if (next === undefined || rest.length === 1) return null;
  const condition = find.filter[next];
  if (hasLower(condition) && hasUpper(condition)) return null;
  if (find.sort.length > 0 && find.sort[0]![0] === next && find.limit > 0) return null;
  return `the range on ${next} is open on a side (${JSON.stringify(condition)}), with no limit along the index`;
}

describe('MongoDB history queries (in-memory driver stand-in)', () => {
  it('every read and the commit name an index matching their shape, each a range bounded on both sides or an ordered walk up to a limit', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    const history = store.history!;
    await store.commit(C, board(600, 6, 1), 3600, 0);
    // The later documents keep a shared member apart: their reads also fetch its texts.
    await store.commit(C, board(200, 2, 3601, 'q', true), 4000, 3600);
    for (const at of [0, 1, 900, 2000, 3700, 4000]) {
      for (const facets of [undefined, [dossier], [noDossier, dossier], []]) {
        const filtered = facets ? { facets } : {};
        for (const offset of [0, 30, 350, 700]) await history.list(C, at, { ...filtered, offset, limit: 25 });
        await history.count(C, at, facets);
        const first = await history.scan(C, at, { ...filtered, limit: 40 });
        const last = first[first.length - 1];
        if (last) await history.scan(C, at, { ...filtered, limit: 40, after: { sortKey: last.sortKey, id: last.id } });
      }
      await history.get(C, 'p00007', at);
      await history.getMany(C, ['p00001', 'p00002', 'q00003', 'nobody'], at);
      await history.pointAtSeq(C, at);
      await history.changes(C, { from: at, to: 4000, limit: 30 });
      await history.changes(C, { from: at, to: 4000, limit: 30, after: { seq: 3000, id: 'p00100' } });
    }
    const ofHistory = mongo.finds.filter((find) => find.collection.startsWith('_pulseboard_history'));
    const wrong = ofHistory.map((find) => [find, shapeProblem(find)] as const).filter(([, why]) => why !== null);
    assert.deepEqual(
      wrong.map(([find, why]) => `${find.collection} ${JSON.stringify(find.filter)}: ${why}`),
      [],
    );
    assert.ok(
      ofHistory.some((find) => baseName(find.collection) === HISTORY_SHARED),
      'reads of versions with a shared member fetch its texts',
    );
    const used = new Set(ofHistory.map((find) => find.hint));
    for (const name of [...Object.keys(INDEX_KEYS), '_id_'])
      assert.ok(used.has(name), `no read used ${name}: each index serves a read`);
    // The stand-in refuses a hint naming no index of the collection, as the server does.
    await assert.rejects(
      mongo.client.db().collection(HISTORY_VERSIONS).find({}, { hint: 'placement_listing' }).toArray(),
      /does not correspond to an existing index/,
    );
    await store.close();
  });

  it('a commit carrying versions makes the same calls at any size: one read of the open versions, one of the counts, one bulk write per history collection', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    await store.commit(C, board(1, 1, 1, 'warm'), 1, 0);
    let checkpoint = 1;
    const expected = [
      'startTransaction',
      '_pulseboard_checkpoints.findOne',
      `${C}.find`,
      '_pulseboard_counts.bulkWrite',
      `${C}.bulkWrite`,
      '_pulseboard_chunks.find',
      '_pulseboard_chunks.bulkWrite',
      '_pulseboard_chunks.find',
      `${HISTORY_VERSIONS}.find`,
      `${HISTORY_COUNTS}.find`,
      `${HISTORY_VERSIONS}.bulkWrite`,
      `${HISTORY_PLACEMENTS}.bulkWrite`,
      `${HISTORY_COUNTS}.bulkWrite`,
      '_pulseboard_checkpoints.updateOne',
      'commitTransaction',
    ];
    for (const size of [1, 50, 1000]) {
      // New documents written four times each in the batch (the third of them moving to the dossier facet).
      mongo.calls.length = 0;
      mongo.bulkOptions.length = 0;
      const writes = board(size, 4, checkpoint + 1, `n${size}-`);
      assert.deepEqual(await store.commit(C, writes, checkpoint + 4 * size, checkpoint), { ok: true });
      checkpoint += 4 * size;
      assert.deepEqual(mongo.calls, expected, `a commit of ${size} documents`);
      const history = mongo.bulkOptions.filter((b) => b.collection.startsWith('_pulseboard_history'));
      const moving = Math.ceil(size / 3);
      assert.deepEqual(history, [
        // Every write is a version inserted, each closed in place by the next write of the batch.
        { collection: HISTORY_VERSIONS, ordered: false, operations: 4 * size },
        // A placement per document, and one more for each that changed facet.
        { collection: HISTORY_PLACEMENTS, ordered: false, operations: size + moving },
        // A count document per write that changed a facet's count.
        { collection: HISTORY_COUNTS, ordered: false, operations: size + moving },
      ]);
    }
    // A later batch closes the open versions it supersedes by key (an update each, no read of them).
    mongo.calls.length = 0;
    mongo.bulkOptions.length = 0;
    // Each written once more where it stands (the facet it ended in).
    const again = board(50, 1, checkpoint + 1, 'n50-').map((w, i) => {
      const facet = i % 3 === 0 ? dossier : noDossier;
      return { ...w, facet, versions: w.versions!.map((v) => ({ ...v, facet })) };
    });
    await store.commit(C, again, checkpoint + 50, checkpoint);
    assert.deepEqual(
      mongo.bulkOptions.filter((b) => b.collection.startsWith('_pulseboard_history')),
      [{ collection: HISTORY_VERSIONS, ordered: false, operations: 100 }],
      'versions closed and added; placements and counts unchanged (same sort key and facet)',
    );
    const open = [...mongo.data.get(HISTORY_VERSIONS)!.values()].filter((row) => row.to === OPEN_END);
    assert.equal(open.length, 1 + 1 + 50 + 1000, 'one open version per document');
    await store.close();
  });

  it("a store made with the versions' time index loses it when it opens; one without it opens as before", async () => {
    const mongo = fakeMongo();
    await mongo.client
      .db()
      .collection(HISTORY_VERSIONS)
      .createIndexes([{ key: { c: 1, writtenAt: 1, from: 1 }, name: 'history_time' }]);
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    await store.commit(C, board(3, 2, 1), 6, 0);
    assert.equal((await store.history!.get(C, 'p00001', 6))?.seq, 5);
    await assert.rejects(
      mongo.client.db().collection(HISTORY_VERSIONS).find({}, { hint: 'history_time' }).toArray(),
      /does not correspond to an existing index/,
    );
    await store.close();
    const fresh = fakeMongo();
    const other = mongoReadStoreOn(fresh.client, 0, { ownsClient: false });
    await other.commit(C, board(3, 2, 1), 6, 0);
    assert.equal(await other.history!.count(C, 6), 3);
    await other.close();
  });

  it('a store written before the history records from its checkpoint then (history reads answer 503 until a replay); a cleared one from 0', async () => {
    const mongo = fakeMongo();
    // The checkpoints a version without the history left, and none of its collections.
    mongo.data.set('_pulseboard_checkpoints', new Map([[C, { _id: C, position: 42 }]]));
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    assert.equal(await store.history!.recordedFrom(C), 42, 'before any commit of this version');
    assert.equal(await store.history!.recordedFrom('calls'), 0);
    await store.commit(C, board(3, 1, 43), 45, 42);
    await store.commit('calls', [], 45, 0);
    assert.equal(await store.history!.recordedFrom(C), 42);
    assert.equal(await store.history!.recordedFrom('calls'), 0, 'a collection first written now records from 0');
    assert.deepEqual(mongo.data.get(HISTORY_FROM)?.get(C), { _id: C, position: 42 });
    await store.clear();
    assert.equal(await store.history!.recordedFrom(C), 0);
    await store.commit(C, board(3, 1, 1), 3, 0);
    assert.equal(await store.history!.recordedFrom(C), 0);
    assert.equal(await store.history!.count(C, 3), 3);
    await store.close();
  });

  it('a replay into a new generation writes the same history, byte for byte, as a catch-up in small batches; each generation keeps its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-mongo-history-'));
    const log = createSqliteEventLog(join(dir, 'events.sqlite'));
    try {
      await appendBoardHistory(log, { projects: 30, steps: 400, seed: 11 });
      const mongo = fakeMongo();
      const live = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
      for (const batchSize of [1, 3, 50])
        await createProjectorRunner(log, live, projectsProjector, { batchSize, maxPendingDocs: 5 }).catchUp();
      await appendBoardHistory(log, { projects: 30, steps: 150, seed: 12, prefix: 'later' });
      await createProjectorRunner(log, live, projectsProjector, { batchSize: 7 }).catchUp();
      const replayed = mongoReadStoreOn(mongo.client, 1, { ownsClient: false });
      await createProjectorRunner(log, replayed, projectsProjector).catchUp();

      const dump = (name: string) =>
        JSON.stringify(
          [...(mongo.data.get(name)?.values() ?? [])]
            .map((row) => ({
              ...row,
              ...(row.doc ? { doc: Buffer.from(row.doc as Uint8Array).toString('hex') } : {}),
              ...(row.text ? { text: Buffer.from(row.text as Uint8Array).toString('hex') } : {}),
            }))
            .sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0)),
        );
      for (const name of [HISTORY_VERSIONS, HISTORY_SHARED, HISTORY_PLACEMENTS, HISTORY_COUNTS, HISTORY_FROM]) {
        assert.equal(generationOfCollection(`${name}_v1`), 1);
        assert.equal(generationOfCollection(name), 0);
        assert.ok((mongo.data.get(name)?.size ?? 0) > 0, `${name} was written`);
        assert.equal(dump(`${name}_v1`), dump(name), `${name}: replay and catch-up differ`);
      }
      assert.ok(mongo.data.get(HISTORY_VERSIONS)!.size > 150, 'the log made many public writes');
      // The dossier is kept once per change of it: fewer texts than versions that refer to one.
      const referring = [...mongo.data.get(HISTORY_VERSIONS)!.values()].filter((row) => row.shared !== undefined);
      assert.ok(referring.length > mongo.data.get(HISTORY_SHARED)!.size, 'versions share their dossier texts');
      // Clearing generation 1 empties its history and leaves generation 0's.
      await replayed.clear();
      assert.equal(mongo.data.get(`${HISTORY_VERSIONS}_v1`)?.size, 0);
      assert.ok(mongo.data.get(HISTORY_VERSIONS)!.size > 150);
      await live.close();
      await replayed.close();
    } finally {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
