/**
 * The MongoDB read store's commit (readmodels/mongodb/mongodb-commit.ts) against an in-memory
 * stand-in for the driver's MongoClient, counting server calls: a commit costs the same few calls
 * whatever the batch's size (one bulk write of documents, one of counters, one read of previous facets,
 * no read or write per document), and the counters it keeps with $inc match a recount. No Docker
 * needed; the contract suite (test/contract/readstore.mongodb.test.ts) runs the real driver where a
 * server answers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { BSON } from 'mongodb';
import { INDEXES } from '../../readmodels/mongodb/mongodb-layout.ts';
import { mongoReadStoreOn } from '../../readmodels/mongodb/mongodb-read-store.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import { expectedPage, listingWrites, type ListingState } from '../support/flipping-listing.ts';
import { fakeMongo, order, type Row, type SentFind } from '../support/mongodb-fake.ts';

function write(id: string, facet: string, seq: number): DocWrite {
  return {
    id,
    doc: { id, seq },
    state: { seen: seq },
    seq,
    writtenAt: '2026-11-22T00:00:00.000Z',
    sortKey: String(seq).padStart(6, '0'),
    facet,
    keys: { handle: [`h-${id}`] },
  };
}

describe('MongoDB read store commit (in-memory driver stand-in)', () => {
  it('costs a fixed number of server calls per commit, whatever its size: one bulk write of documents, one of counters, one of chunk counts, no read per document', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    // First commit of a collection: its indexes, the replica-set check, the counter marker and the first chunk, once per process.
    await store.commit('boards', [write('warm', 'visible', 1)], 1, 0);
    const costs: string[][] = [];
    let checkpoint = 1;
    const commit = async (size: number) => {
      mongo.calls.length = 0;
      mongo.bulkOptions.length = 0;
      const writes = Array.from({ length: size }, (_, i) =>
        write(`d${size}-${i}`, i % 3 === 0 ? 'suppressed' : 'visible', checkpoint + i + 1),
      );
      assert.deepEqual(await store.commit('boards', writes, checkpoint + size, checkpoint), { ok: true });
      checkpoint += size;
      return [...mongo.calls];
    };
    for (const size of [1, 100, 3000]) {
      costs.push(await commit(size));
      assert.deepEqual(mongo.bulkOptions, [
        { collection: '_pulseboard_counts', ordered: false, operations: size >= 3 ? 2 : 1 },
        { collection: 'boards', ordered: false, operations: size },
        // Every new document counts in the one chunk there is: one $inc for the batch.
        { collection: '_pulseboard_chunks', ordered: false, operations: 1 },
      ]);
    }
    const expected = [
      'startTransaction',
      '_pulseboard_checkpoints.findOne',
      'boards.find',
      '_pulseboard_counts.bulkWrite',
      'boards.bulkWrite',
      '_pulseboard_chunks.find',
      '_pulseboard_chunks.bulkWrite',
      '_pulseboard_chunks.find',
      '_pulseboard_checkpoints.updateOne',
      'commitTransaction',
    ];
    assert.deepEqual(
      costs,
      [expected, expected, expected],
      'a commit of 1, 100 or 3000 documents makes the same calls',
    );
    // A commit that takes the chunk past its bound cuts it: one read of its rows, its document replaced by the pieces.
    const cut = await commit(2000);
    assert.deepEqual(cut, [
      ...expected.slice(0, 8),
      'boards.find',
      '_pulseboard_chunks.deleteOne',
      '_pulseboard_chunks.insertMany',
      ...expected.slice(8),
    ]);
    const chunks = [...mongo.data.get('_pulseboard_chunks')!.values()];
    assert.equal(
      chunks.reduce((sum, chunk) => sum + (chunk.total as number), 0),
      5102,
    );
    assert.ok(
      chunks.length >= 3 && chunks.every((chunk) => (chunk.total as number) <= 2048),
      chunks.map((chunk) => chunk.total).join(' '),
    );
    await store.close();
  });

  it('lists a page at any depth as the slice of the listing, through inserts, moves of sort key and facet, and cuts of chunks', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const facets = ['visible', 'suppressed', 'pending'];
    const current = new Map<string, { sortKey: string; facet: string }>();
    const put = (id: string, sortKey: string, facet: string, seq: number): DocWrite => {
      current.set(id, { sortKey, facet });
      return { ...write(id, facet, seq), sortKey };
    };
    const key = (n: number) => `k${String(n).padStart(5, '0')}`;
    const batches: (() => DocWrite[])[] = [
      () =>
        Array.from({ length: 6000 }, (_, i) =>
          put(`d${String(i).padStart(5, '0')}`, key(random(9000)), facets[random(3)]!, 1),
        ),
      () => [
        ...Array.from({ length: 1500 }, (_, i) => {
          const id = `d${String(random(6000)).padStart(5, '0')}`;
          const was = current.get(id)!;
          return put(id, i % 2 ? key(random(9000)) : was.sortKey, i % 3 ? facets[random(3)]! : was.facet, 2);
        }),
        ...Array.from({ length: 4500 }, (_, i) =>
          put(`e${String(i).padStart(5, '0')}`, key(4500 + random(2)), facets[random(3)]!, 2),
        ),
      ],
    ];
    for (const [i, batch] of batches.entries()) {
      assert.deepEqual(await store.commit('boards', batch(), i + 1, i), { ok: true });
      const chunks = [...mongo.data.get('_pulseboard_chunks')!.values()];
      assert.ok(
        chunks.every((chunk) => (chunk.total as number) <= 4096),
        `chunks within their bound: ${chunks.map((chunk) => chunk.total).join(' ')}`,
      );
      for (const listed of [undefined, ['visible'], ['visible', 'suppressed']]) {
        const expected = [...current]
          .filter(([, doc]) => listed === undefined || listed.includes(doc.facet))
          .sort(([a, x], [b, y]) => (x.sortKey !== y.sortKey ? (x.sortKey < y.sortKey ? 1 : -1) : a < b ? 1 : -1))
          .map(([id]) => id);
        for (const offset of [
          0,
          2100,
          expected.length - 2100,
          expected.length - 50,
          ...Array.from({ length: 12 }, () => random(expected.length)),
        ]) {
          const page = await store.list('boards', { ...(listed ? { facets: listed } : {}), offset, limit: 50 });
          assert.deepEqual(
            page.docs.map((doc) => doc.id),
            expected.slice(offset, offset + 50),
            `batch ${i + 1}, offset ${offset}, facets ${String(listed)}`,
          );
          assert.equal(page.total, expected.length, `batch ${i + 1}, total, facets ${String(listed)}`);
        }
      }
    }
    await store.close();
  });

  it('reads a page, the chunks that place it and its total in one snapshot session: commits between those reads are not seen', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    const writer = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    let seq = 1;
    let state: ListingState = 0;
    const flip = async () => {
      state = state === 0 ? 1 : 0;
      seq += 1;
      assert.deepEqual(await writer.commit('boards', listingWrites(state, seq), seq, seq - 1), { ok: true });
    };
    await store.commit('boards', listingWrites(0, 1, true), 1, 0);
    // Once per process: the writer's indexes and checks, the reader's counters and chunks.
    await flip();
    await flip();
    await store.list('boards', { facets: ['a'], offset: 0, limit: 1 });
    // Pages from the front and the end, through the chunks and not, in either state when the read starts.
    for (const offset of [1200, 2600, 3400, 4900, 5900]) {
      for (let round = 0; round < 2; round += 1) {
        const at: ListingState = state;
        let commits = 0;
        const commitBetweenReads = async () => {
          mongo.hooks.afterRead = undefined;
          await flip();
          commits += 1;
          mongo.hooks.afterRead = commitBetweenReads;
        };
        mongo.hooks.afterRead = commitBetweenReads;
        const page = await store.list('boards', { facets: ['a'], offset, limit: 50 });
        mongo.hooks.afterRead = undefined;
        assert.ok(commits >= 2, `offset ${offset}: ${commits} commits landed between the page's reads`);
        assert.deepEqual(
          { total: page.total, ids: page.docs.map((doc) => doc.id) },
          expectedPage(at, offset, 50),
          `offset ${offset}, read from state ${at}`,
        );
      }
    }
    await store.close();
    await writer.close();
  });

  it('files a page under a checkpoint no newer than the page: both read at majority, so a commit not yet on a majority is in neither', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    const writer = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    await writer.commit('boards', listingWrites(0, 1, true), 1, 0);
    await store.list('boards', { facets: ['a'], offset: 0, limit: 1 });
    const read = async () => {
      const checkpoint = await store.checkpoint('boards', { fresh: true });
      const page = await store.list('boards', { facets: ['a'], offset: 3400, limit: 50 });
      return { checkpoint, total: page.total, ids: page.docs.map((doc) => doc.id) };
    };
    // A commit applied on the primary that a majority does not have yet.
    mongo.lag();
    assert.deepEqual(await writer.commit('boards', listingWrites(1, 2), 2, 1), { ok: true });
    assert.deepEqual(await read(), { checkpoint: 1, ...expectedPage(0, 3400, 50) });
    mongo.catchUp();
    assert.deepEqual(await read(), { checkpoint: 2, ...expectedPage(1, 3400, 50) });
    await store.close();
    await writer.close();
  });

  it('finds documents by a lookup value in one query, with their state, in id order, up to the limit', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    const keyed = (id: string, seq: number, contracts: string[]): DocWrite => ({
      ...write(id, 'visible', seq),
      keys: { contract: contracts },
    });
    await store.commit(
      'boards',
      [
        keyed('c', 1, ['0xabc']),
        keyed('a', 2, ['0xabc', 'base:0xabc']),
        keyed('b', 3, ['0xdef']),
        keyed('d', 4, ['0xabc']),
      ],
      4,
      0,
    );
    mongo.calls.length = 0;
    const found = await store.findDocs('boards', 'contract', '0xabc', 2);
    assert.deepEqual(mongo.calls, ['boards.find'], 'one query');
    assert.deepEqual(
      found.map((d) => [d.id, d.doc, d.state]),
      [
        ['a', { id: 'a', seq: 2 }, { seen: 2 }],
        ['c', { id: 'c', seq: 1 }, { seen: 1 }],
      ],
    );
    assert.deepEqual(
      (await store.findDocs('boards', 'contract', '0xabc', 10)).map((d) => d.id),
      ['a', 'c', 'd'],
    );
    assert.deepEqual(
      await store.findDocs('boards', 'contract', '0xabc', 0),
      [],
      'limit 0: none (the server would read it as no limit)',
    );
    assert.deepEqual(await store.findDocs('boards', 'handle', '0xabc', 10), [], 'values are per key');
    await store.close();
  });

  it('keeps the counters with $inc sums of the batch: new documents, facet moves, a document written twice in one batch', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    await store.commit('boards', [write('a', 'visible', 1), write('b', 'visible', 2), write('c', 'pending', 3)], 3, 0);
    assert.equal(await store.count('boards'), 3);
    assert.equal(await store.count('boards', ['visible']), 2);
    // b moves to suppressed, c to visible and then back to pending in the same batch (the last write wins), d is new.
    const outcome = await store.commit(
      'boards',
      [write('b', 'suppressed', 4), write('c', 'visible', 5), write('d', 'visible', 6), write('c', 'pending', 7)],
      7,
      3,
    );
    assert.deepEqual(outcome, { ok: true });
    assert.deepEqual(
      {
        all: await store.count('boards'),
        visible: await store.count('boards', ['visible']),
        suppressed: await store.count('boards', ['suppressed']),
        pending: await store.count('boards', ['pending']),
      },
      { all: 4, visible: 2, suppressed: 1, pending: 1 },
    );
    const stored = await store.getMany('boards', ['a', 'b', 'c', 'd']);
    assert.deepEqual(
      [...stored.values()].map((doc) => [doc.id, doc.facet, doc.seq]),
      [
        ['a', 'visible', 1],
        ['b', 'suppressed', 4],
        ['c', 'pending', 7],
        ['d', 'visible', 6],
      ],
    );
    // The counters match a recount of the stored documents.
    const recount = new Map<string, number>();
    for (const row of mongo.data.get('boards')!.values())
      recount.set(row.facet as string, (recount.get(row.facet as string) ?? 0) + 1);
    for (const [facet, n] of recount) assert.equal(await store.count('boards', [facet]), n, facet);
    // A commit from a moved checkpoint writes nothing.
    mongo.bulkOptions.length = 0;
    assert.deepEqual(await store.commit('boards', [write('e', 'visible', 8)], 8, 3), {
      ok: false,
      reason: 'checkpoint_moved',
      actual: 7,
    });
    assert.deepEqual(mongo.bulkOptions, []);
    assert.equal(await store.checkpoint('boards'), 7);
    await store.close();
  });

  it("keeps a document's JSON as its UTF-8 bytes (BSON binary) and reads those bytes as they come, and a document kept as text by an earlier version too", async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    const value = { id: 'u', name: 'Café — ✓ 東京 🚀', lone: '\udc00' };
    const text = JSON.stringify(value);
    await store.commit('boards', [{ ...write('u', 'visible', 1), doc: value }], 1, 0);
    const rows = mongo.data.get('boards')!;
    // Through the driver's own BSON, as a server would store and send it.
    rows.set('u', BSON.deserialize(BSON.serialize(rows.get('u')!)) as Row);
    assert.ok(rows.get('u')!.doc instanceof BSON.Binary, 'stored as binary');
    rows.set('old', { ...rows.get('u')!, _id: 'old', doc: text });
    for (const id of ['u', 'old']) {
      const stored = await store.get('boards', id);
      assert.ok(stored, id);
      assert.deepEqual(Buffer.from(stored.utf8), Buffer.from(text, 'utf8'), `${id}: utf8`);
      assert.equal(stored.json, text, `${id}: json`);
      assert.deepEqual(stored.doc, value, `${id}: doc`);
    }
    await store.close();
  });
});

/** The index keys a hint names: the read-model collections' indexes and the chunks' order. */
const HINTED: Record<string, [string, number][]> = {
  ...Object.fromEntries(INDEXES.map((index) => [index.name, Object.entries(index.key)])),
  chunk_order: [
    ['collection', 1],
    ['startKey', 1],
    ['startId', 1],
  ],
};

/** Why a sorted query's hint does not match its shape (equality fields first, then the sort, one direction), or null. */
function hintMismatch(find: SentFind): string | null {
  if (find.hint === undefined) return 'no hint';
  const keys = HINTED[find.hint];
  if (!keys) return `unknown index ${find.hint}`;
  // Fields compared for equality (a value or $in) lead the index; the sort follows in one direction.
  const equal = Object.entries(find.filter)
    .filter(
      ([field, condition]) =>
        !field.startsWith('$') &&
        field !== '_id' &&
        (typeof condition !== 'object' || (condition !== null && '$in' in condition)),
    )
    .map(([field]) => field);
  const leading = keys.slice(0, equal.length).map(([field]) => field);
  if ([...leading].sort().join() !== [...equal].sort().join())
    return `equality on ${equal.join() || 'nothing'}, index starts ${leading.join()}`;
  const rest = keys.slice(equal.length);
  if (rest.length !== find.sort.length)
    return `sort ${JSON.stringify(find.sort)}, index continues ${JSON.stringify(rest)}`;
  const flip = rest[0]![1] === find.sort[0]![1] ? 1 : -1;
  const same = rest.every(
    ([field, direction], i) => find.sort[i]![0] === field && find.sort[i]![1] === direction * flip,
  );
  return same ? null : `sort ${JSON.stringify(find.sort)}, index continues ${JSON.stringify(rest)}`;
}

/** Rows as a version before the counters and chunks wrote them: documents only. */
function oldRows(n: number): Row[] {
  const facets = ['visible', 'suppressed', 'pending'];
  return Array.from({ length: n }, (_, i) => {
    const id = `d${String(i).padStart(6, '0')}`;
    return {
      _id: id,
      doc: JSON.stringify({ id }),
      state: '{}',
      seq: i + 1,
      writtenAt: '2026-11-22T00:00:00.000Z',
      sortKey: `k${String((i * 7919) % 4001).padStart(5, '0')}`,
      facet: facets[(i * 31) % 3]!,
      keys: '{}',
      lookup: [],
    };
  });
}

describe('MongoDB read store query shapes and upgrade steps (in-memory driver stand-in)', () => {
  it('every query that sorts names the index matching its shape: a delta with facets uses delta_facet, keyset bounds and chunk reads are hinted', async () => {
    const mongo = fakeMongo();
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    const writes = Array.from({ length: 9000 }, (_, i) =>
      write(`d${String(i).padStart(5, '0')}`, ['visible', 'suppressed', 'pending'][i % 3]!, i + 1),
    );
    await store.commit('boards', writes, 9000, 0);
    mongo.finds.length = 0;
    for (const facets of [undefined, ['visible'], ['visible', 'pending']]) {
      const filtered = facets ? { facets } : {};
      for (const offset of [0, 2500, 4000, 8000]) await store.list('boards', { ...filtered, offset, limit: 20 });
      await store.listKeyset('boards', { ...filtered, limit: 20 });
      await store.listKeyset('boards', { ...filtered, limit: 20, before: { sortKey: '004000', id: 'd03999' } });
      await store.delta('boards', {
        ...filtered,
        start: { after: { seq: 100, id: 'd00099' } },
        upToSeq: 9000,
        limit: 20,
      });
      await store.delta('boards', {
        ...filtered,
        start: { fromWrittenAt: '2026-11-21T00:00:00.000Z' },
        upToSeq: 9000,
        limit: 20,
      });
    }
    await store.findIds('boards', 'handle', 'h-d00001', 5);
    await store.findDocs('boards', 'handle', 'h-d00001', 5);
    await store.findIdsMany('boards', 'handle', ['h-d00001', 'h-d00002'], 5);
    // A commit that grows a chunk past its bound cuts it: its rows are read in listing order.
    await store.commit(
      'boards',
      Array.from({ length: 3000 }, (_, i) => ({ ...write(`e${i}`, 'visible', 9001 + i), sortKey: '000001' })),
      12000,
      9000,
    );
    const sorted = mongo.finds.filter((find) => find.sort.length > 0);
    assert.ok(
      sorted.some((find) => find.hint === 'delta_facet'),
      'a delta with facets reads delta_facet',
    );
    assert.ok(
      sorted.some((find) => find.collection === '_pulseboard_chunks'),
      'chunk reads were made',
    );
    const wrong = sorted.map((find) => [find, hintMismatch(find)] as const).filter(([, why]) => why !== null);
    assert.deepEqual(
      wrong.map(([find, why]) => `${find.collection} ${JSON.stringify(find.filter)}: ${why}`),
      [],
    );
    await store.close();
  });

  it('counts and cuts a collection written by an earlier version in steps no transaction of which passes the limit, and resumes a cut stopped half way', async () => {
    const mongo = fakeMongo();
    const rows = oldRows(20_000);
    const table = new Map(rows.map((row) => [row._id, row]));
    mongo.data.set('boards', table);
    // A transaction reading more than 5,000 rows fails as one past MongoDB's 60 s limit does.
    mongo.limits.transactionRows = 5000;
    // The cut stops at its second write of chunks (a process stopped, a failover).
    let chunkWrites = 0;
    mongo.hooks.beforeBulkWrite = (collection) => {
      if (collection === '_pulseboard_chunks' && ++chunkWrites === 2) throw new Error('injected: connection lost');
    };
    const store = mongoReadStoreOn(mongo.client, 0, { ownsClient: false });
    await assert.rejects(store.list('boards', { offset: 10_000, limit: 50 }), /injected/);
    const readBefore = mongo.limits.rowsRead;
    const page = await store.list('boards', { offset: 10_000, limit: 50 });
    const rowsReadByResume = mongo.limits.rowsRead - readBefore;
    assert.ok(rowsReadByResume < 20_000, `the cut resumed from its last chunk (read ${rowsReadByResume} rows)`);
    const listing = [...table.values()].sort((a, b) => order(b.sortKey, a.sortKey) || order(b._id, a._id));
    assert.equal(page.total, 20_000);
    assert.deepEqual(
      page.docs.map((doc) => doc.id),
      listing.slice(10_000, 10_050).map((row) => row._id),
    );
    for (const facet of ['visible', 'suppressed', 'pending']) {
      const ids = listing.filter((row) => row.facet === facet).map((row) => row._id);
      const facetPage = await store.list('boards', { facets: [facet], offset: 3000, limit: 30 });
      assert.equal(facetPage.total, ids.length, `${facet}: total`);
      assert.deepEqual(
        facetPage.docs.map((doc) => doc.id),
        ids.slice(3000, 3030),
        `${facet}: page`,
      );
    }
    const chunks = [...mongo.data.get('_pulseboard_chunks')!.values()];
    assert.equal(
      chunks.reduce((sum, chunk) => sum + (chunk.total as number), 0),
      20_000,
      'the chunks count every row once',
    );
    assert.ok(chunks.every((chunk) => (chunk.total as number) <= 2048));
    // Commits go on from there, within the same limit.
    assert.deepEqual(await store.commit('boards', [write('new', 'visible', 20_001)], 20_001, 0), { ok: true });
    assert.equal(await store.count('boards'), 20_001);
    await store.close();
  });
});
