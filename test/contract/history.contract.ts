/**
 * The history read model's contract (readmodels/history/port.ts), run unchanged against every read
 * store that keeps one: a seeded board's log is projected by the real runner, and every read as of a
 * point is compared with the live projector's own fold of the log up to that point.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { EventLog, RecordedEvent } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { PROJECT_FACETS, PROJECTS_COLLECTION, projectsProjector } from '../../projectors/projects.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import type { HistoryStore, VersionWrite } from '../../readmodels/history/port.ts';
import type { DocWrite } from '../../readmodels/port.ts';
import { skipFor } from '../support/skip.ts';
import { allEvents, appendBoardHistory, boardAt } from '../support/board-history.ts';
import type { ContractOptions } from './eventlog.contract.ts';
import type { ReadStoreHandle } from './readstore.contract.ts';

const C = PROJECTS_COLLECTION;

/** A document written by `versions` (oldest first), as a projector hands it to a commit; the live document is the last. */
export function written(id: string, versions: Omit<VersionWrite, 'writtenAt'>[]): DocWrite {
  const full = versions.map((v) => ({ ...v, writtenAt: new Date(Date.UTC(2026, 10, 1) + v.seq * 1000).toISOString() }));
  const last = full[full.length - 1]!;
  return {
    id,
    doc: last.doc,
    state: {},
    seq: last.seq,
    writtenAt: last.writtenAt,
    sortKey: last.sortKey,
    facet: last.facet,
    keys: {},
    versions: full,
  };
}

export function historyContract(
  adapterName: string,
  open: () => Promise<ReadStoreHandle>,
  options: ContractOptions = {},
): void {
  describe(`HistoryStore contract: ${adapterName}`, { ...skipFor(options.skip ?? false), timeout: 60_000 }, () => {
    let dir: string;
    let log: EventLog;
    let handle: ReadStoreHandle;
    let history: HistoryStore;
    let events: RecordedEvent[];
    let head: number;
    /** Points to read at: before the first event, a spread of positions, the head. */
    let points: number[];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'pulseboard-history-contract-'));
      log = createSqliteEventLog(join(dir, 'events.sqlite'));
      await appendBoardHistory(log, { projects: 70, steps: 900, seed: 43 });
      events = await allEvents(log);
      head = events[events.length - 1]!.position;
      handle = await open();
      // Small batches: a document written by several batches, and several writes of one in a batch.
      await createProjectorRunner(log, handle.store, projectsProjector, { batchSize: 37 }).catchUp();
      assert.ok(handle.store.history, `${adapterName} keeps a history`);
      history = handle.store.history;
      points = [0, 1, 25, 100, 233, 401, 402, 600, 777, head - 1, head];
    });
    afterAll(async () => {
      await handle?.dispose();
      await log?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('is complete: the store recorded it from the first position', async () => {
      assert.equal(await history.recordedFrom(C), 0);
    });

    it('a project as of P is the live fold up to P, and null before its first sighting', async () => {
      for (const at of points) {
        const reference = new Map(boardAt(events, at).map((d) => [d.id, d]));
        for (let n = 0; n < 70; n += 3) {
          const id = `proj-${n}`;
          const version = await history.get(C, id, at);
          const expected = reference.get(id);
          assert.equal(version?.json ?? null, expected?.json ?? null, `${id} as of ${at}`);
          if (version) {
            assert.equal(version.seq, expected!.seq, `${id} as of ${at}: its write's position`);
            assert.equal(version.writtenAt, expected!.writtenAt);
            assert.equal(version.sortKey, expected!.sortKey);
            assert.equal(version.facet, expected!.facet);
            assert.deepEqual(Buffer.from(version.utf8), Buffer.from(version.json, 'utf8'));
          }
        }
        const many = await history.getMany(C, ['proj-1', 'proj-2', 'nobody', 'proj-1'], at);
        assert.deepEqual([...many.keys()].sort(), ['proj-1', 'proj-2'].filter((id) => reference.has(id)).sort());
      }
    });

    it('the board as of P, every page from either end and per facet, is the live board then with its totals', async () => {
      for (const at of points) {
        const reference = boardAt(events, at);
        for (const facets of [undefined, [PROJECT_FACETS.dossier], [PROJECT_FACETS.noDossier]] as const) {
          const listed = facets === undefined ? reference : reference.filter((d) => facets.includes(d.facet as never));
          assert.equal(await history.count(C, at, facets), listed.length, `count as of ${at} ${facets ?? 'all'}`);
          for (const [offset, limit] of [
            [0, 7],
            [5, 7],
            [Math.max(0, listed.length - 4), 7],
            [listed.length, 5],
            [0, 1000],
          ] as const) {
            const page = await history.list(C, at, { ...(facets ? { facets } : {}), offset, limit });
            assert.equal(page.total, listed.length);
            assert.deepEqual(
              page.docs.map((d) => d.json),
              listed.slice(offset, offset + limit).map((d) => d.json),
              `page ${offset}+${limit} as of ${at} (${facets ?? 'all'})`,
            );
          }
          // The keyset walk an export makes gives the same rows in the same order.
          const walked: string[] = [];
          for (let after: { sortKey: string; id: string } | undefined; ;) {
            const rows = await history.scan(C, at, {
              ...(facets ? { facets } : {}),
              ...(after ? { after } : {}),
              limit: 6,
            });
            walked.push(...rows.map((r) => r.json));
            if (rows.length < 6) break;
            const last = rows[rows.length - 1]!;
            after = { sortKey: last.sortKey, id: last.id };
          }
          assert.deepEqual(
            walked,
            listed.map((d) => d.json),
            `scan as of ${at}`,
          );
        }
      }
    });

    it('points: the last write at or before a position, with its time', async () => {
      const writes = new Map<number, string>();
      for (const at of points) {
        for (const d of boardAt(events, at)) writes.set(d.seq, d.writtenAt);
      }
      const lastWriteAtOrBefore = (p: number) => Math.max(0, ...[...writes.keys()].filter((s) => s <= p));
      for (const at of points) {
        const point = await history.pointAtSeq(C, at);
        const expected = lastWriteAtOrBefore(at);
        // Writes overwritten before the next sampled point are not in `writes`; only check what the reference knows.
        if (point) assert.ok(point.seq <= at && point.seq >= expected, `point at ${at}: ${point.seq} vs ${expected}`);
        else assert.equal(expected, 0);
        if (point && writes.has(point.seq)) assert.equal(point.writtenAt, writes.get(point.seq));
      }
      assert.equal(await history.pointAtSeq(C, 0), null);
      const last = lastWriteAtOrBefore(head);
      assert.deepEqual(await history.pointAtSeq(C, head), { seq: last, writtenAt: writes.get(last) });
    });

    it('changes between two points: one row per project whose document differs, in delta order, paged', async () => {
      for (const [from, to] of [
        [0, head],
        [100, 401],
        [401, 402],
        [233, 777],
        [777, 233 + 1000],
      ] as const) {
        const before = new Map(boardAt(events, from).map((d) => [d.id, d]));
        const after = boardAt(events, Math.min(to, head));
        const expected = after
          .filter((d) => d.seq > from && before.get(d.id)?.json !== d.json)
          .sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : 1));
        const got: { id: string; before: string | null; after: string; seq: number }[] = [];
        for (let cursor: { seq: number; id: string } | undefined; ;) {
          const rows = await history.changes(C, { from, to, ...(cursor ? { after: cursor } : {}), limit: 4 });
          got.push(
            ...rows.map((r) => ({
              id: r.after.id,
              before: r.before?.json ?? null,
              after: r.after.json,
              seq: r.after.seq,
            })),
          );
          if (rows.length < 4) break;
          const last = rows[rows.length - 1]!.after;
          cursor = { seq: last.seq, id: last.id };
        }
        assert.deepEqual(
          got,
          expected.map((d) => ({ id: d.id, before: before.get(d.id)?.json ?? null, after: d.json, seq: d.seq })),
          `changes (${from}, ${to}]`,
        );
      }
    });

    it('documents with a large shared member read back exactly, whatever their shape and wherever it stands', async () => {
      const fresh = await open();
      try {
        const long = (tag: string) => ({ tag, text: `${tag} `.repeat(200), list: [1, 2, 3] });
        // Every version names `big` as its shared member (VersionWrite.sharedMember); a store may keep it apart.
        const at = (seq: number, doc: unknown) => ({
          seq,
          sortKey: 'k',
          facet: PROJECT_FACETS.dossier,
          doc,
          sharedMember: 'big',
        });
        const kept = long('kept');
        // Each document's versions, oldest first; a member the next version leaves unchanged is the same object.
        const docs: Record<string, unknown[]> = {
          middle: [
            { id: 'middle', name: 'Ünïcode 🚀 before it', big: kept, after: 1 },
            { id: 'middle', name: 'Ünïcode 🚀 before it', big: kept, after: 2 },
            { id: 'middle', name: 'Ünïcode 🚀 before it', big: long('changed'), after: 2 },
            { id: 'middle', name: 'Ünïcode 🚀 before it', big: null, after: 2 },
            { id: 'middle', name: 'Ünïcode 🚀 before it', big: long('kept'), after: 2 },
            { id: 'middle', name: 'Ünïcode 🚀 before it', big: long('changed'), after: 2 },
          ],
          first: [
            { big: long('first'), id: 'first' },
            { big: long('first'), id: 'first', n: 1 },
          ],
          last: [{ id: 'last', big: [long('array member')] }],
          short: [{ id: 'short', big: { a: 1 } }],
          nested: [{ id: 'nested', inner: { big: 0 }, big: long('nested key of the same name') }],
          proto: [JSON.parse(`{"id":"proto","__proto__":{"x":1},"big":${JSON.stringify(long('proto'))}}`)],
          text: [{ id: 'text', big: 'a string member is never kept apart '.repeat(20) }],
        };
        let seq = 0;
        const seqs: Record<string, number[]> = {};
        const writes = Object.entries(docs).map(([id, versions]) =>
          written(
            id,
            versions.map((doc) => {
              (seqs[id] ??= []).push(++seq);
              return at(seq, doc);
            }),
          ),
        );
        // Two commits: the second document's later versions meet the stored current one.
        await fresh.store.commit(C, writes.slice(0, 2), 6, 0);
        await fresh.store.commit(C, writes.slice(2), seq, 6);
        const history = fresh.store.history!;
        for (const [id, versions] of Object.entries(docs)) {
          for (const [i, doc] of versions.entries()) {
            const version = await history.get(C, id, seqs[id]![i]!);
            assert.equal(version?.json, JSON.stringify(doc), `${id} version ${i}`);
            assert.deepEqual(Buffer.from(version!.utf8), Buffer.from(JSON.stringify(doc), 'utf8'));
          }
        }
        const board = await history.list(C, seq, { offset: 0, limit: 100 });
        assert.deepEqual(
          board.docs.map((d) => d.json).sort(),
          Object.values(docs)
            .map((v) => JSON.stringify(v[v.length - 1]))
            .sort(),
        );
        const scanned = await history.scan(C, seq, { limit: 100 });
        assert.deepEqual(
          scanned.map((d) => d.json),
          board.docs.map((d) => d.json),
        );
        // The middle document between its versions: a change of the member alone is a change; the same text is none.
        const change = async (from: number, to: number) =>
          (await history.changes(C, { from, to, limit: 10 }))
            .filter((r) => r.after.id === 'middle')
            .map((r) => [r.before?.json ?? null, r.after.json]);
        const middle = docs['middle']!.map((d) => JSON.stringify(d));
        const [s0, s1, s2, s3, s4, s5] = seqs['middle']!;
        assert.deepEqual(await change(s0!, s1!), [[middle[0], middle[1]]], 'another member changed');
        assert.deepEqual(await change(s1!, s2!), [[middle[1], middle[2]]], 'the large member alone changed');
        assert.deepEqual(await change(s2!, s3!), [[middle[2], middle[3]]], 'the large member removed');
        assert.deepEqual(await change(s3!, s4!), [[middle[3], middle[4]]], 'put back');
        assert.deepEqual(await change(s1!, s4!), [], 'the same text again, written anew');
        assert.deepEqual(await change(s2!, s5!), [], 'the same text again, after others');
        assert.deepEqual(await change(0, s5!), [[null, middle[5]]]);
      } finally {
        await fresh.dispose();
      }
    });

    it('changes leave out a document written and changed back between the points, and still fill a page', async () => {
      const fresh = await open();
      try {
        const at = (seq: number, doc: unknown) => ({ seq, sortKey: 'k', facet: PROJECT_FACETS.noDossier, doc });
        await fresh.store.commit(
          C,
          [
            written('back', [at(1, { a: 1 }), at(3, { a: 2 }), at(5, { a: 1 })]),
            written('moved', [at(2, { b: 1 }), at(6, { b: 2 })]),
            written('new', [at(7, { c: 1 })]),
          ],
          7,
          0,
        );
        const changes = fresh.store.history!;
        const rows = async (from: number, to: number, limit: number) => {
          const got: string[] = [];
          for (let after: { seq: number; id: string } | undefined; ;) {
            const page = await changes.changes(C, { from, to, limit, ...(after ? { after } : {}) });
            got.push(...page.map((r) => `${r.after.id}:${r.before?.json ?? 'null'}>${r.after.json}`));
            if (page.length < limit) break;
            after = { seq: page[page.length - 1]!.after.seq, id: page[page.length - 1]!.after.id };
          }
          return got;
        };
        const expected = ['moved:{"b":1}>{"b":2}', 'new:null>{"c":1}'];
        assert.deepEqual(await rows(2, 7, 1), expected, 'a page of one');
        assert.deepEqual(await rows(2, 7, 10), expected);
        assert.deepEqual(await rows(2, 4, 10), ['back:{"a":1}>{"a":2}'], 'changed between 2 and 4');
      } finally {
        await fresh.dispose();
      }
    });
  });
}
