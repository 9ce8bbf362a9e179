/**
 * The ReadStore contract (readmodels/port.ts): one suite, run unchanged against every adapter.
 * Tests share one store and isolate themselves by collection name; `clear` gets a store of its own.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { skipFor } from '../support/skip.ts';
import type { ListQuery, ReadStore, StoredDoc } from '../../readmodels/port.ts';
import type { ContractOptions } from './eventlog.contract.ts';

export type ReadStoreHandle = {
  store: ReadStore;
  /** Closes the store and removes what open() created. */
  dispose(): Promise<void>;
};

function freshCollection(): string {
  return `c${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

type Fields = Partial<Omit<StoredDoc, 'id'>>;

/** JSON text as a projector makes it; a value that is not JSON gets none, so the store must serialise (and refuse) it. */
function jsonOf(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** Every member of a stored document as plain data: what the port promises is the values, not the object's make. */
function members(stored: StoredDoc | null | undefined): Record<string, unknown> | null | undefined {
  if (!stored) return stored;
  const { id, doc, json, state, seq, writtenAt, sortKey, facet, keys } = stored;
  // A document read from a store carries its text's UTF-8 bytes too (one written by a test does not).
  if ('utf8' in stored)
    assert.deepEqual(Buffer.from(stored.utf8), Buffer.from(json, 'utf8'), `${id}: utf8 is the text's bytes`);
  return { id, doc, json, state, seq, writtenAt, sortKey, facet, keys };
}

function doc(id: string, fields: Fields = {}): StoredDoc {
  const value = fields.doc ?? { id, title: `doc ${id}` };
  const json = jsonOf(value);
  return {
    id,
    doc: value,
    ...(json === undefined ? {} : { json }),
    state: fields.state ?? { history: [id] },
    seq: fields.seq ?? 1,
    writtenAt: fields.writtenAt ?? '2026-11-20T08:00:00.000Z',
    sortKey: fields.sortKey ?? '2026-11-20T08:00:00.000Z',
    facet: fields.facet ?? 'visible',
    keys: fields.keys ?? {},
  } as StoredDoc;
}

const ids = (docs: readonly StoredDoc[]) => docs.map((d) => d.id);

export function readStoreContract(
  adapterName: string,
  open: () => Promise<ReadStoreHandle>,
  options: ContractOptions = {},
): void {
  const skip = options.skip ?? false;

  describe(`ReadStore contract: ${adapterName}`, () => {
    let handle: ReadStoreHandle | undefined;
    const store = (): ReadStore => {
      assert.ok(handle, 'store not opened');
      return handle.store;
    };
    /** A page's documents (its total is checked where the listing's size is known). */
    const listed = async (collection: string, query: ListQuery): Promise<StoredDoc[]> =>
      (await store().list(collection, query)).docs;

    beforeAll(async () => {
      if (!skip) handle = await open();
    });
    afterAll(async () => {
      await handle?.dispose();
    });

    describe(`${adapterName}: commit and checkpoint`, () => {
      it(`${adapterName}: the checkpoint is 0 before any commit`, skipFor(skip), async () => {
        assert.equal(await store().checkpoint(freshCollection()), 0);
      });

      it(
        `${adapterName}: a checkpoint is a value or a promise, and a store that fails answers a rejected promise, never a throw`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(collection, [doc('a')], 4);
          assert.equal(await store().checkpoint(collection, { fresh: true }), 4);
          const own = await open();
          await own.dispose();
          let answered: unknown;
          assert.doesNotThrow(() => {
            answered = own.store.checkpoint(collection, { fresh: true });
          }, 'a closed store does not throw from checkpoint');
          // Rejected (or, where a driver reconnects on its own, answered): either way it settles.
          if (answered instanceof Promise) await answered.catch(() => undefined);
        },
      );

      it(
        `${adapterName}: commit writes the documents and the checkpoint together, per collection`,
        skipFor(skip),
        async () => {
          const [one, two] = [freshCollection(), freshCollection()];
          await store().commit(one, [doc('a', { seq: 3 }), doc('b', { seq: 5 })], 5);
          assert.equal(await store().checkpoint(one), 5);
          assert.equal(await store().checkpoint(two), 0, 'another collection keeps its own checkpoint');
          assert.equal((await store().get(one, 'a'))?.seq, 3);
          assert.equal(await store().get(two, 'a'), null);
          await store().commit(one, [doc('a', { seq: 9, doc: { v: 2 } })], 12);
          assert.equal(await store().checkpoint(one), 12);
          assert.deepEqual((await store().get(one, 'a'))?.doc, { v: 2 });
          assert.equal((await store().get(one, 'b'))?.seq, 5, 'documents not in a commit are left alone');
        },
      );

      it(`${adapterName}: a commit without writes still advances the checkpoint`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, [], 40);
        assert.equal(await store().checkpoint(collection), 40);
        assert.equal(await store().count(collection), 0);
      });

      it(
        `${adapterName}: a commit from a checkpoint another writer has moved applies nothing`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          assert.deepEqual(await store().commit(collection, [doc('a', { doc: { v: 1 }, seq: 4 })], 4, 0), { ok: true });
          // A second writer that also started from 0 must not apply its fold of the same events again,
          // nor move the checkpoint back.
          assert.deepEqual(await store().commit(collection, [doc('a', { doc: { v: 99 }, seq: 3 }), doc('b')], 3, 0), {
            ok: false,
            reason: 'checkpoint_moved',
            actual: 4,
          });
          assert.equal(await store().checkpoint(collection), 4);
          assert.deepEqual((await store().get(collection, 'a'))?.doc, { v: 1 });
          assert.equal(await store().get(collection, 'b'), null);
          assert.deepEqual(await store().commit(collection, [doc('a', { doc: { v: 2 }, seq: 9 })], 9, 4), { ok: true });
          assert.equal(await store().checkpoint(collection), 9);
        },
      );

      it(`${adapterName}: of two writers racing from one checkpoint, exactly one commits`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, [], 10);
        const outcomes = await Promise.all(
          [20, 30].map((to) => store().commit(collection, [doc('raced', { doc: { to }, seq: to })], to, 10)),
        );
        const won = outcomes.filter((o) => o.ok).length;
        assert.equal(won, 1, JSON.stringify(outcomes));
        const winner = outcomes[0]!.ok ? 20 : 30;
        assert.equal(await store().checkpoint(collection), winner);
        assert.deepEqual((await store().get(collection, 'raced'))?.doc, { to: winner });
      });

      it(`${adapterName}: a commit that fails writes nothing and keeps the checkpoint`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, [doc('kept', { doc: { v: 1 }, seq: 1 })], 1);
        const unserializable = doc('bad', { doc: { n: 10n } });
        await assert.rejects(
          store().commit(collection, [doc('kept', { doc: { v: 2 }, seq: 2 }), doc('new'), unserializable], 2),
        );
        assert.equal(await store().checkpoint(collection), 1);
        assert.deepEqual((await store().get(collection, 'kept'))?.doc, { v: 1 });
        assert.equal(await store().get(collection, 'new'), null);
        assert.equal(await store().count(collection), 1);
      });
    });

    describe(`${adapterName}: reading documents`, () => {
      it(`${adapterName}: get returns every field, or null when missing`, skipFor(skip), async () => {
        const collection = freshCollection();
        const written = doc('p-1', {
          doc: { id: 'p-1', name: 'One' },
          state: { samples: [{ at: '2026-11-20T08:00:00Z', fol: 10 }] },
          seq: 17,
          writtenAt: '2026-11-20T09:30:00.123Z',
          sortKey: '2026-11-19T00:00:00.000Z',
          facet: 'dossier',
          keys: { handle: ['one'], contract: ['base:0xabc', '0xabc'] },
        });
        await store().commit(collection, [written], 17);
        assert.deepEqual(members(await store().get(collection, 'p-1')), members(written));
        assert.equal(await store().get(collection, 'p-2'), null);
      });

      it(`${adapterName}: a rewrite replaces the whole document`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(
          collection,
          [doc('x', { doc: { a: 1, b: 2 }, state: { s: 1 }, facet: 'one', keys: { k: ['v'] } })],
          1,
        );
        const rewritten = doc('x', { doc: { a: 3 }, state: { t: 2 }, facet: 'two', keys: {}, seq: 2, sortKey: 'z' });
        await store().commit(collection, [rewritten], 2);
        assert.deepEqual(members(await store().get(collection, 'x')), members(rewritten));
      });

      it(`${adapterName}: getMany returns the documents found, keyed by id`, skipFor(skip), async () => {
        const collection = freshCollection();
        const docs = Array.from({ length: 1100 }, (_, i) => doc(`id-${String(i).padStart(4, '0')}`, { seq: i + 1 }));
        await store().commit(collection, docs, 1100);
        const wanted = ['id-0000', 'id-0599', 'missing', 'id-1099', ...docs.slice(100, 900).map((d) => d.id)];
        const found = await store().getMany(collection, wanted);
        assert.equal(found.size, 802, 'id-0599 is asked for twice and found once');
        assert.equal(found.has('missing'), false);
        assert.deepEqual(members(found.get('id-0599')), members(docs[599]));
        assert.equal(found.get('id-1099')?.seq, 1100);
        assert.equal((await store().getMany(collection, [])).size, 0);
        assert.equal((await store().getMany(freshCollection(), ['id-0000'])).size, 0);
      });

      it(`${adapterName}: documents round-trip as byte-identical JSON`, skipFor(skip), async () => {
        const collection = freshCollection();
        const tricky = {
          zeta: 1,
          alpha: [0, -1.5, 9007199254740991, 1e21, 1e-7, true, false, null],
          text: 'quotes " backslash \\ newline \n tab \t — ünïcødé 日本語 🚀',
          lone: '\ud83d only half',
          empty: { obj: {}, arr: [], str: '' },
          nested: { b: { d: [[{ y: 1, x: 2 }]] }, a: null },
        };
        const state = { 'dotted.key': 1, $dollar: 'kept', 'voter:abc': 'up', order: { z: 1, a: 2 } };
        const written = doc('json', {
          doc: tricky,
          state,
          keys: { handle: ['Mixed.Case', 'ünï'], url: ['https://x.example/a?b=c'] },
        });
        await store().commit(collection, [written], 1);
        const [got] = await Promise.all([store().get(collection, 'json')]);
        assert.ok(got);
        assert.equal(JSON.stringify(got.doc), JSON.stringify(tricky));
        assert.equal(JSON.stringify(got.state), JSON.stringify(state));
        assert.equal(JSON.stringify(got.keys), JSON.stringify(written.keys));
        const [first] = await listed(collection, { offset: 0, limit: 1 });
        assert.equal(JSON.stringify(first?.doc), JSON.stringify(tricky), 'list returns the same bytes');
        const [delta] = await store().delta(collection, { start: { after: { seq: 0, id: '' } }, upToSeq: 1, limit: 1 });
        assert.equal(JSON.stringify(delta?.doc), JSON.stringify(tricky), 'delta returns the same bytes');
      });

      it(
        `${adapterName}: every read hands the document's text and its UTF-8 bytes, the same document`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          const value = { id: 'u', name: 'Café — ✓ 東京 🚀', sep: '\u2028 \u2029', lone: '\udc00', quote: '"\\' };
          await store().commit(collection, [doc('u', { doc: value, keys: { handle: ['u'] } })], 1);
          const text = JSON.stringify(value);
          const reads = {
            get: await store().get(collection, 'u'),
            getMany: (await store().getMany(collection, ['u'])).get('u'),
            list: (await listed(collection, { offset: 0, limit: 1 }))[0],
            listKeyset: (await store().listKeyset(collection, { limit: 1 }))[0],
            delta: (await store().delta(collection, { start: { after: { seq: 0, id: '' } }, upToSeq: 1, limit: 1 }))[0],
          };
          for (const [read, stored] of Object.entries(reads)) {
            assert.ok(stored, read);
            // Bytes first, as a response is written: they must not depend on the text having been made.
            assert.deepEqual(Buffer.from(stored.utf8), Buffer.from(text, 'utf8'), `${read}: utf8`);
            assert.equal(stored.json, text, `${read}: json`);
            assert.deepEqual(stored.doc, value, `${read}: doc`);
          }
        },
      );
    });

    describe(`${adapterName}: lookup keys`, () => {
      it(
        `${adapterName}: findIds finds documents by key value, in id order, up to the limit`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(
            collection,
            [
              doc('c', { keys: { contract: ['0xabc'], handle: ['shared'] } }),
              doc('a', { keys: { contract: ['0xabc', 'base:0xabc'] } }),
              doc('b', { keys: { handle: ['0xabc'] } }),
              doc('d', { keys: { contract: ['0xabc'] } }),
            ],
            1,
          );
          assert.deepEqual(await store().findIds(collection, 'contract', '0xabc', 10), ['a', 'c', 'd']);
          assert.deepEqual(await store().findIds(collection, 'contract', '0xabc', 2), ['a', 'c']);
          assert.deepEqual(await store().findIds(collection, 'contract', 'base:0xabc', 10), ['a']);
          assert.deepEqual(await store().findIds(collection, 'handle', '0xabc', 10), ['b'], 'values are per key');
          assert.deepEqual(await store().findIds(collection, 'handle', 'SHARED', 10), [], 'values match exactly');
          assert.deepEqual(await store().findIds(freshCollection(), 'contract', '0xabc', 10), [], 'per collection');
        },
      );

      it(
        `${adapterName}: findDocs reads the documents findIds names, with their state, in id order, up to the limit`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(
            collection,
            [
              doc('c', { keys: { contract: ['0xabc'], handle: ['shared'] }, doc: { v: 'c' }, state: { s: 3 } }),
              doc('a', { keys: { contract: ['0xabc', 'base:0xabc'] }, doc: { v: 'a' }, state: { s: 1 } }),
              doc('b', { keys: { handle: ['0xabc'] } }),
              doc('d', { keys: { contract: ['0xabc'] }, doc: { v: 'd' }, state: { s: 4 } }),
            ],
            1,
          );
          const found = await store().findDocs(collection, 'contract', '0xabc', 10);
          assert.deepEqual(
            found.map((d) => [d.id, d.doc, d.state]),
            [
              ['a', { v: 'a' }, { s: 1 }],
              ['c', { v: 'c' }, { s: 3 }],
              ['d', { v: 'd' }, { s: 4 }],
            ],
          );
          const byId = await store().getMany(collection, ['a', 'c']);
          assert.deepEqual(
            (await store().findDocs(collection, 'contract', '0xabc', 2)).map((d) => [
              d.id,
              d.json,
              d.seq,
              d.writtenAt,
              d.sortKey,
              d.facet,
              d.keys,
            ]),
            ['a', 'c'].map((id) => {
              const d = byId.get(id)!;
              return [d.id, d.json, d.seq, d.writtenAt, d.sortKey, d.facet, d.keys];
            }),
            'the same documents getMany reads, up to the limit',
          );
          assert.deepEqual(
            (await store().findDocs(collection, 'handle', '0xabc', 10)).map((d) => d.id),
            ['b'],
            'values are per key',
          );
          assert.deepEqual(await store().findDocs(collection, 'handle', 'SHARED', 10), [], 'values match exactly');
          assert.deepEqual(await store().findDocs(collection, 'contract', '0xabc', 0), [], 'limit 0: none');
          assert.deepEqual(await store().findDocs(freshCollection(), 'contract', '0xabc', 10), [], 'per collection');
          // A document that no longer holds the value is not found by it.
          await store().commit(collection, [doc('c', { keys: { handle: ['shared'] }, seq: 2 })], 2);
          assert.deepEqual(
            (await store().findDocs(collection, 'contract', '0xabc', 10)).map((d) => d.id),
            ['a', 'd'],
          );
        },
      );

      it(
        `${adapterName}: findIdsMany answers several values of one key at once, each like findIds`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(
            collection,
            [
              doc('c', { keys: { cc: ['base:0x1', 'eth:0x2'] } }),
              doc('a', { keys: { cc: ['base:0x1'], other: ['eth:0x2'] } }),
              doc('b', { keys: { cc: ['base:0x1'] } }),
              doc('d', { keys: { cc: ['eth:0x2'] } }),
            ],
            1,
          );
          const found = await store().findIdsMany(collection, 'cc', ['base:0x1', 'eth:0x2', 'sol:none', 'base:0x1'], 2);
          assert.deepEqual(Object.fromEntries(found), { 'base:0x1': ['a', 'b'], 'eth:0x2': ['c', 'd'] });
          for (const value of ['base:0x1', 'eth:0x2']) {
            assert.deepEqual(found.get(value), await store().findIds(collection, 'cc', value, 2));
          }
          assert.equal((await store().findIdsMany(collection, 'cc', [], 5)).size, 0);
          assert.equal((await store().findIdsMany(collection, 'other', ['base:0x1'], 5)).size, 0, 'values are per key');
        },
      );

      it(
        `${adapterName}: findKeysByPrefix answers the values of one key from a prefix, in (value, id) order, at most limit`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(
            collection,
            [
              doc('c', { keys: { handle: ['alpha', 'beta'] } }),
              doc('a', { keys: { handle: ['alpine'], site: ['alps.example'] } }),
              doc('b', { keys: { handle: ['alpha'] } }),
              doc('d', { keys: { handle: ['al"quote', 'zeta'] } }),
            ],
            1,
          );
          const pairs = async (prefix: string, limit = 10) =>
            (await store().findKeysByPrefix(collection, 'handle', prefix, limit)).map((p) => `${p.value}/${p.id}`);
          assert.deepEqual(await pairs('alp'), ['alpha/b', 'alpha/c', 'alpine/a']);
          assert.deepEqual(await pairs('al'), ['al"quote/d', 'alpha/b', 'alpha/c', 'alpine/a']);
          assert.deepEqual(await pairs('al', 2), ['al"quote/d', 'alpha/b']);
          assert.deepEqual(await pairs('al"'), ['al"quote/d'], 'a quote in the prefix is a character like any other');
          assert.deepEqual(await pairs(''), ['al"quote/d', 'alpha/b', 'alpha/c', 'alpine/a', 'beta/c', 'zeta/d']);
          assert.deepEqual(await pairs('alps'), [], 'values are per key');
          assert.deepEqual(await pairs('x'), []);
          assert.deepEqual(await pairs('alp', 0), []);
        },
      );

      it(
        `${adapterName}: a rewrite with unchanged keys keeps them, one that drops a key loses only that`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(collection, [doc('p', { keys: { handle: ['one', 'two'], site: ['x.example'] } })], 1);
          await store().commit(
            collection,
            [doc('p', { keys: { handle: ['one', 'two'], site: ['x.example'] }, seq: 2, doc: { v: 2 } })],
            2,
          );
          assert.deepEqual(await store().findIds(collection, 'handle', 'two', 10), ['p']);
          await store().commit(collection, [doc('p', { keys: { handle: ['one'], site: ['x.example'] }, seq: 3 })], 3);
          assert.deepEqual(await store().findIds(collection, 'handle', 'two', 10), []);
          assert.deepEqual(await store().findIds(collection, 'handle', 'one', 10), ['p']);
          assert.deepEqual(await store().findIds(collection, 'site', 'x.example', 10), ['p']);
        },
      );

      it(`${adapterName}: rewriting a document replaces its keys`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(
          collection,
          [doc('p', { keys: { handle: ['old', 'older'] } }), doc('q', { keys: { handle: ['old'] } })],
          1,
        );
        assert.deepEqual(await store().findIds(collection, 'handle', 'old', 10), ['p', 'q']);
        await store().commit(collection, [doc('p', { keys: { handle: ['new'] }, seq: 2 })], 2);
        assert.deepEqual(await store().findIds(collection, 'handle', 'old', 10), ['q']);
        assert.deepEqual(await store().findIds(collection, 'handle', 'older', 10), []);
        assert.deepEqual(await store().findIds(collection, 'handle', 'new', 10), ['p']);
        await store().commit(collection, [doc('q', { keys: {}, seq: 3 })], 3);
        assert.deepEqual(await store().findIds(collection, 'handle', 'old', 10), []);
        // A handle abandoned by one project and claimed by another.
        await store().commit(collection, [doc('q', { keys: { handle: ['new'] }, seq: 4 })], 4);
        assert.deepEqual(await store().findIds(collection, 'handle', 'new', 10), ['p', 'q']);
      });
    });

    describe(`${adapterName}: listings`, () => {
      const listing = [
        doc('a', { sortKey: '2026-11-20T10:00:00Z', facet: 'dossier' }),
        doc('b', { sortKey: '2026-11-20T12:00:00Z', facet: 'no_dossier' }),
        doc('c', { sortKey: '2026-11-20T10:00:00Z', facet: 'no_dossier' }),
        doc('d', { sortKey: '2026-11-20T09:00:00Z', facet: 'dossier' }),
        doc('e', { sortKey: '2026-11-20T12:00:00Z', facet: 'pending' }),
        doc('f', { sortKey: '2026-11-20T11:00:00Z', facet: 'dossier' }),
      ];

      it(
        `${adapterName}: list orders by sortKey then id, both descending, with offset and limit`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(collection, listing, 1);
          assert.deepEqual(ids(await listed(collection, { offset: 0, limit: 10 })), ['e', 'b', 'f', 'c', 'a', 'd']);
          assert.deepEqual(ids(await listed(collection, { offset: 2, limit: 2 })), ['f', 'c']);
          assert.deepEqual(ids(await listed(collection, { offset: 6, limit: 2 })), []);
          for (const offset of [0, 2, 6, 9])
            assert.equal(
              (await store().list(collection, { offset, limit: 2 })).total,
              6,
              `total beside the page at ${offset}`,
            );
        },
      );

      it(`${adapterName}: list and count filter by facets`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, listing, 1);
        assert.deepEqual(ids(await listed(collection, { facets: ['dossier'], offset: 0, limit: 10 })), ['f', 'a', 'd']);
        assert.deepEqual(ids(await listed(collection, { facets: ['dossier', 'no_dossier'], offset: 1, limit: 3 })), [
          'f',
          'c',
          'a',
        ]);
        assert.equal(
          (await store().list(collection, { facets: ['dossier', 'no_dossier'], offset: 1, limit: 3 })).total,
          5,
          "the total of the page's facets",
        );
        assert.deepEqual(
          await store().list(collection, { facets: [], offset: 0, limit: 10 }),
          { total: 0, docs: [] },
          'no facets: nothing',
        );
        assert.equal(await store().count(collection), 6);
        assert.equal(await store().count(collection, ['dossier', 'no_dossier']), 5);
        assert.equal(await store().count(collection, ['pending']), 1);
        assert.equal(await store().count(collection, ['unknown']), 0);
        assert.equal(await store().count(collection, []), 0);
        assert.equal(await store().count(freshCollection()), 0);
      });

      it(
        `${adapterName}: pages past the middle of the listing come in the same order as from the front`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          const many = Array.from({ length: 23 }, (_, i) =>
            doc(`p${String(i).padStart(2, '0')}`, {
              sortKey: `2026-11-20T${String(10 + (i % 7)).padStart(2, '0')}:00:00Z`,
              facet: i % 3 === 0 ? 'pending' : 'dossier',
            }),
          );
          await store().commit(collection, many, 1);
          const everything = ids(await listed(collection, { offset: 0, limit: 100 }));
          const visible = ids(await listed(collection, { facets: ['dossier'], offset: 0, limit: 100 }));
          assert.equal(everything.length, 23);
          assert.equal(visible.length, 15);
          for (const [facets, expected] of [
            [undefined, everything],
            [['dossier'], visible],
          ] as const) {
            for (let offset = 0; offset < expected.length + 2; offset += 1) {
              for (const limit of [1, 4, 7]) {
                const page = ids(await listed(collection, { ...(facets ? { facets } : {}), offset, limit }));
                assert.deepEqual(
                  page,
                  expected.slice(offset, offset + limit),
                  `offset ${offset} limit ${limit} facets ${String(facets)}`,
                );
              }
            }
          }
        },
      );

      it(
        `${adapterName}: a page at any depth of a listing many chunks long is the listing's slice, through inserts and moves of key and facet`,
        skipFor(skip),
        async () => {
          // Larger than several position chunks (list-chunks.ts cuts past 4096 rows), written in commits
          // that grow one chunk far past that, move documents across chunks and facets, and repeat an id.
          const collection = freshCollection();
          let seed = 7;
          const random = (n: number) => {
            seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
            return seed % n;
          };
          const facetNames = ['dossier', 'no_dossier', 'pending'];
          const keyOf = (minute: number) => new Date(Date.UTC(2026, 10, 1) + minute * 60_000).toISOString();
          const current = new Map<string, { sortKey: string; facet: string }>();
          const write = (id: string, sortKey: string, facet: string, seq: number) => {
            current.set(id, { sortKey, facet });
            return doc(id, { sortKey, facet, seq });
          };
          const newDocs = (from: number, count: number, minutes: number, seq: number) =>
            Array.from({ length: count }, (_, i) =>
              write(`d${String(from + i).padStart(6, '0')}`, keyOf(random(minutes)), facetNames[random(3)]!, seq),
            );
          const commits: (() => StoredDoc[])[] = [
            () => newDocs(0, 3000, 20_000, 1),
            () => newDocs(3000, 9000, 20_000, 2),
            () => [
              ...Array.from({ length: 2500 }, (_, i) => {
                const id = `d${String(random(12_000)).padStart(6, '0')}`;
                const was = current.get(id)!;
                const move = i % 3;
                return write(
                  id,
                  move === 1 ? was.sortKey : keyOf(random(20_000)),
                  move === 0 ? was.facet : facetNames[random(3)]!,
                  3,
                );
              }),
              // Many new documents inside one narrow stretch of keys: one chunk grows far past its bound.
              ...newDocs(12_000, 5000, 3, 3),
            ],
          ];
          for (const [i, writes] of commits.entries()) {
            await store().commit(collection, writes(), i + 1);
            for (const facets of [undefined, ['dossier'], ['dossier', 'no_dossier']]) {
              const expected = [...current]
                .filter(([, d]) => facets === undefined || facets.includes(d.facet))
                .sort(([a, x], [b, y]) => (x.sortKey !== y.sortKey ? (x.sortKey < y.sortKey ? 1 : -1) : a < b ? 1 : -1))
                .map(([id]) => id);
              assert.equal(
                await store().count(collection, facets),
                expected.length,
                `count after commit ${i + 1}, facets ${String(facets)}`,
              );
              const offsets = [
                0,
                1,
                49,
                expected.length - 50,
                expected.length - 1,
                expected.length,
                ...Array.from({ length: 30 }, () => random(expected.length)),
              ];
              for (const offset of offsets) {
                const page = await store().list(collection, { ...(facets ? { facets } : {}), offset, limit: 50 });
                assert.deepEqual(
                  ids(page.docs),
                  expected.slice(Math.max(0, offset), Math.max(0, offset) + 50),
                  `commit ${i + 1}, offset ${offset}, facets ${String(facets)}`,
                );
                assert.equal(
                  page.total,
                  expected.length,
                  `total, commit ${i + 1}, offset ${offset}, facets ${String(facets)}`,
                );
              }
            }
          }
        },
      );

      it(
        `${adapterName}: counts follow every commit: new documents, facet changes, rewrites in place`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(collection, listing, 1);
          await store().commit(
            collection,
            [
              doc('e', { facet: 'dossier', seq: 2 }),
              doc('b', { facet: 'no_dossier', seq: 2, doc: { v: 2 } }),
              doc('g', { facet: 'dossier', seq: 2 }),
            ],
            2,
          );
          assert.equal(await store().count(collection, ['pending']), 0, 'e left pending');
          assert.equal(await store().count(collection, ['dossier']), 5, 'e joined dossier, g is new');
          assert.equal(await store().count(collection, ['no_dossier']), 2, 'b rewritten in its facet counts once');
          assert.equal(await store().count(collection), 7);
          await store().commit(
            collection,
            [doc('e', { facet: 'pending', seq: 3 }), doc('e', { facet: 'dossier', seq: 3 })],
            3,
          );
          assert.equal(
            await store().count(collection, ['dossier']),
            5,
            'two writes of one document in a batch count it once',
          );
          assert.equal(await store().count(collection, ['pending']), 0);
        },
      );

      it(`${adapterName}: listings carry no projector state`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, listing, 1);
        for (const row of [
          ...(await listed(collection, { offset: 0, limit: 10 })),
          ...(await store().listKeyset(collection, { limit: 10 })),
          ...(await store().delta(collection, { start: { after: { seq: 0, id: '' } }, upToSeq: 1, limit: 10 })),
        ]) {
          assert.equal(row.state, null, row.id);
          assert.equal(row.json, JSON.stringify(row.doc));
        }
        assert.deepEqual((await store().get(collection, 'a'))?.state, { history: ['a'] }, 'get still reads it');
      });

      it(`${adapterName}: listKeyset continues strictly after the given row`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, listing, 1);
        const first = await store().listKeyset(collection, { limit: 2 });
        assert.deepEqual(ids(first), ['e', 'b']);
        const next = await store().listKeyset(collection, {
          limit: 2,
          before: { sortKey: first[1]!.sortKey, id: first[1]!.id },
        });
        assert.deepEqual(ids(next), ['f', 'c']);
        const tie = await store().listKeyset(collection, {
          limit: 10,
          before: { sortKey: '2026-11-20T10:00:00Z', id: 'c' },
        });
        assert.deepEqual(ids(tie), ['a', 'd'], 'a tie on sortKey continues by id');
        const filtered = await store().listKeyset(collection, {
          facets: ['dossier'],
          limit: 10,
          before: { sortKey: '2026-11-20T11:00:00Z', id: 'f' },
        });
        assert.deepEqual(ids(filtered), ['a', 'd']);
        assert.deepEqual(
          await store().listKeyset(collection, { limit: 10, before: { sortKey: '2026-11-20T09:00:00Z', id: 'd' } }),
          [],
        );
      });
    });

    describe(`${adapterName}: delta`, () => {
      const rows = [
        doc('m', { seq: 4, writtenAt: '2026-11-20T08:00:04.000Z', facet: 'dossier' }),
        doc('k', { seq: 2, writtenAt: '2026-11-20T08:00:02.000Z', facet: 'no_dossier' }),
        doc('z', { seq: 4, writtenAt: '2026-11-20T08:00:04.000Z', facet: 'no_dossier' }),
        doc('a', { seq: 4, writtenAt: '2026-11-20T08:00:04.000Z', facet: 'pending' }),
        doc('q', { seq: 7, writtenAt: '2026-11-20T08:00:07.000Z', facet: 'dossier' }),
        doc('b', { seq: 9, writtenAt: '2026-11-20T08:00:09.000Z', facet: 'dossier' }),
      ];

      it(`${adapterName}: delta after a position orders by (seq, id) and stops at upToSeq`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, rows, 9);
        const all = await store().delta(collection, { start: { after: { seq: 0, id: '' } }, upToSeq: 9, limit: 10 });
        assert.deepEqual(ids(all), ['k', 'a', 'm', 'z', 'q', 'b']);
        const page = await store().delta(collection, { start: { after: { seq: 4, id: 'a' } }, upToSeq: 9, limit: 2 });
        assert.deepEqual(ids(page), ['m', 'z']);
        const bounded = await store().delta(collection, {
          start: { after: { seq: 4, id: 'z' } },
          upToSeq: 8,
          limit: 10,
        });
        assert.deepEqual(ids(bounded), ['q'], 'rows past the high-water mark wait');
        assert.deepEqual(
          await store().delta(collection, { start: { after: { seq: 9, id: 'b' } }, upToSeq: 9, limit: 10 }),
          [],
        );
      });

      it(
        `${adapterName}: delta from a time starts at the first row written at or after it`,
        skipFor(skip),
        async () => {
          const collection = freshCollection();
          await store().commit(collection, rows, 9);
          const fromFour = await store().delta(collection, {
            start: { fromWrittenAt: '2026-11-20T08:00:04.000Z' },
            upToSeq: 9,
            limit: 10,
          });
          assert.deepEqual(ids(fromFour), ['a', 'm', 'z', 'q', 'b']);
          const between = await store().delta(collection, {
            start: { fromWrittenAt: '2026-11-20T08:00:05.000Z' },
            upToSeq: 7,
            limit: 10,
          });
          assert.deepEqual(ids(between), ['q']);
          const limited = await store().delta(collection, {
            start: { fromWrittenAt: '2026-11-20T00:00:00.000Z' },
            upToSeq: 9,
            limit: 2,
          });
          assert.deepEqual(ids(limited), ['k', 'a']);
          assert.deepEqual(
            await store().delta(collection, {
              start: { fromWrittenAt: '2026-11-21T00:00:00.000Z' },
              upToSeq: 9,
              limit: 10,
            }),
            [],
          );
        },
      );

      it(`${adapterName}: delta filters by facets`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, rows, 9);
        const visible = ['dossier', 'no_dossier'];
        assert.deepEqual(
          ids(
            await store().delta(collection, {
              start: { after: { seq: 0, id: '' } },
              upToSeq: 9,
              facets: visible,
              limit: 10,
            }),
          ),
          ['k', 'm', 'z', 'q', 'b'],
        );
        assert.deepEqual(
          ids(
            await store().delta(collection, {
              start: { fromWrittenAt: '2026-11-20T08:00:04.000Z' },
              upToSeq: 9,
              facets: ['dossier'],
              limit: 10,
            }),
          ),
          ['m', 'q', 'b'],
        );
        assert.deepEqual(
          await store().delta(collection, { start: { after: { seq: 0, id: '' } }, upToSeq: 9, facets: [], limit: 10 }),
          [],
        );
      });

      it(`${adapterName}: a row rewritten later reappears at its new position only`, skipFor(skip), async () => {
        const collection = freshCollection();
        await store().commit(collection, rows, 9);
        await store().commit(
          collection,
          [doc('k', { seq: 11, writtenAt: '2026-11-20T08:00:11.000Z', facet: 'no_dossier' })],
          11,
        );
        const all = await store().delta(collection, { start: { after: { seq: 0, id: '' } }, upToSeq: 11, limit: 10 });
        assert.deepEqual(ids(all), ['a', 'm', 'z', 'q', 'b', 'k']);
        const since = await store().delta(collection, {
          start: { after: { seq: 9, id: 'b' } },
          upToSeq: 11,
          limit: 10,
        });
        assert.deepEqual(ids(since), ['k']);
      });
    });

    describe(`${adapterName}: clear`, () => {
      it(
        `${adapterName}: clear removes every document and checkpoint, and the store stays usable`,
        skipFor(skip),
        async () => {
          const own = await open();
          try {
            const [one, two] = [freshCollection(), freshCollection()];
            await own.store.commit(one, [doc('a', { keys: { k: ['v'] } }), doc('b')], 3);
            await own.store.commit(two, [doc('c')], 8);
            await own.store.clear();
            for (const collection of [one, two]) {
              assert.equal(await own.store.checkpoint(collection), 0);
              assert.equal(await own.store.count(collection), 0);
            }
            assert.equal(await own.store.get(one, 'a'), null);
            assert.deepEqual(await own.store.findIds(one, 'k', 'v', 10), []);
            assert.deepEqual(
              await own.store.delta(one, { start: { after: { seq: 0, id: '' } }, upToSeq: 100, limit: 10 }),
              [],
            );
            await own.store.commit(one, [doc('a', { keys: { k: ['v'] } })], 4);
            assert.equal(await own.store.checkpoint(one), 4);
            assert.deepEqual(await own.store.findIds(one, 'k', 'v', 10), ['a']);
          } finally {
            await own.dispose();
          }
        },
      );
    });
  });
}
