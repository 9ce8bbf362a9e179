import { Binary, type ClientSession, type Collection } from 'mongodb';
import { OPEN_END, type VersionWrite } from '../history/port.ts';
import type { DocWrite } from '../port.ts';
import { sharedOf, splitVersion, type SharedBefore } from '../history/shared-member.ts';
import {
  countKey,
  placementKey,
  textsOf,
  utf8,
  versionKey,
  type CountDoc,
  type PlacementDoc,
  type SharedDoc,
  type VersionDoc,
} from './mongodb-history-layout.ts';

/**
 * A commit's write of one document as the history reads it: its versions and the live document, whose
 * text (`json`, when the live store made it) is reused for the version whose `doc` is the same object.
 */
export type HistoryWrite = Pick<DocWrite, 'id' | 'doc' | 'json' | 'versions'>;

/**
 * The history's write inside a commit's transaction (MongoHistory.write): the batch's versions closed
 * and opened, its placements moved and its facet counts after each write that changed one.
 */
export function createMongoHistoryWriter(collections: {
  versions: Collection<VersionDoc>;
  placements: Collection<PlacementDoc>;
  counts: Collection<CountDoc>;
  sharedTexts: Collection<SharedDoc>;
}): { write(collection: string, writes: readonly HistoryWrite[], session: ClientSession): Promise<void> } {
  const { versions, placements, counts, sharedTexts } = collections;
  return {
    async write(collection, writes, session) {
      const ordered: { id: string; w: HistoryWrite; v: VersionWrite }[] = [];
      for (const w of writes) for (const v of w.versions ?? []) ordered.push({ id: w.id, w, v });
      if (ordered.length === 0) return;
      ordered.sort((a, b) => a.v.seq - b.v.seq);
      const ids = [...new Set(ordered.map((o) => o.id))];
      // The batch's documents as the model last had them: their open versions (one exact key each).
      const open = await versions
        .find(
          { c: collection, id: { $in: ids }, to: OPEN_END },
          { projection: { id: 1, from: 1, sortKey: 1, facet: 1, placed: 1, shared: 1 }, hint: 'history_open', session },
        )
        .toArray();
      const openTexts = await textsOf(sharedTexts, open, session);
      const storedShared = new Map(open.map((row) => [row.id, row.shared]));
      const latestCounts = await counts
        .find(
          { c: collection, at: { $gte: 0, $lte: OPEN_END } },
          { projection: { counts: 1 }, hint: 'count_at', session },
        )
        .sort({ at: -1 })
        .limit(1)
        .next();
      type Latest = { from: number; sortKey: string; facet: string; placed: number };
      const latest = new Map<string, Latest>(open.map((row) => [row.id, row]));
      const facetCounts = new Map((latestCounts?.counts ?? []).map(({ facet, n }) => [facet, n]));
      // What the batch writes: new documents (closed in place when a later write of the batch ends them) and closings of earlier ones.
      const newVersions = new Map<string, VersionDoc>();
      const closedVersions = new Map<string, number>();
      const newPlacements = new Map<string, PlacementDoc>();
      const closedPlacements = new Map<string, number>();
      const countDocs = new Map<number, CountDoc>();
      const newTexts: SharedDoc[] = [];
      // Each document's shared member as its version before kept it (stored, or earlier in this batch).
      const sharedBefore = new Map<string, SharedBefore<string> | null>();
      const close = <T extends { to: number }>(
        made: Map<string, T>,
        closed: Map<string, number>,
        key: string,
        at: number,
      ) => {
        const row = made.get(key);
        if (row) row.to = at;
        else closed.set(key, at);
      };
      const move = (facet: string, by: number) => facetCounts.set(facet, (facetCounts.get(facet) ?? 0) + by);
      for (const { id, w, v } of ordered) {
        const previous = latest.get(id);
        // A write already recorded (the same batch committed again) changes nothing.
        if (previous && previous.from >= v.seq) continue;
        if (previous) close(newVersions, closedVersions, versionKey(collection, id, previous.from), v.seq);
        const stays = previous !== undefined && previous.sortKey === v.sortKey && previous.facet === v.facet;
        const placed = stays ? previous.placed : v.seq;
        let before = sharedBefore.get(id);
        if (before === undefined) {
          const ref = storedShared.get(id);
          const text = ref === undefined ? undefined : openTexts.get(ref);
          before = ref !== undefined && text !== undefined ? { value: undefined, ref, text: utf8.decode(text) } : null;
        }
        const split = splitVersion(v, before, () => {
          // The live document is the batch's last version of it: its text is the one the live store wrote.
          const json = v.doc === w.doc ? (w.json ?? JSON.stringify(v.doc)) : JSON.stringify(v.doc);
          if (json === undefined) throw new TypeError(`document ${id} is not JSON`);
          return json;
        });
        const shared = sharedOf(split, before, (member) => {
          const _id = versionKey(collection, id, v.seq);
          newTexts.push({ _id, text: new Binary(Buffer.from(member, 'utf8')) });
          return _id;
        });
        sharedBefore.set(id, shared);
        newVersions.set(versionKey(collection, id, v.seq), {
          _id: versionKey(collection, id, v.seq),
          c: collection,
          id,
          from: v.seq,
          to: OPEN_END,
          writtenAt: v.writtenAt,
          sortKey: v.sortKey,
          facet: v.facet,
          placed,
          doc: new Binary(Buffer.from(split.doc, 'utf8')),
          ...(shared !== null && split.shared !== null ? { shared: shared.ref, at: split.at } : {}),
        });
        latest.set(id, { from: v.seq, sortKey: v.sortKey, facet: v.facet, placed });
        if (stays) continue;
        // It moved in the listing (or appeared): a new placement, and the facets' counts follow.
        if (previous) {
          close(newPlacements, closedPlacements, placementKey(collection, id, previous.placed), v.seq);
          if (previous.facet !== v.facet) move(previous.facet, -1);
        }
        newPlacements.set(placementKey(collection, id, v.seq), {
          _id: placementKey(collection, id, v.seq),
          c: collection,
          id,
          sortKey: v.sortKey,
          facet: v.facet,
          from: v.seq,
          to: OPEN_END,
        });
        if (!previous || previous.facet !== v.facet) {
          move(v.facet, 1);
          countDocs.set(v.seq, {
            _id: countKey(collection, v.seq),
            c: collection,
            at: v.seq,
            counts: [...facetCounts].map(([facet, n]) => ({ facet, n })),
          });
        }
      }
      const writesOf = <T extends { _id: string }>(made: Map<string, T>, closed: Map<string, number>) => [
        ...[...closed].map(([_id, to]) => ({ updateOne: { filter: { _id }, update: { $set: { to } } } })),
        ...[...made.values()].map((document) => ({ insertOne: { document } })),
      ];
      if (newTexts.length > 0) {
        await sharedTexts.bulkWrite(
          newTexts.map((document) => ({ insertOne: { document } })),
          { ordered: false, session },
        );
      }
      if (newVersions.size > 0) {
        await versions.bulkWrite(writesOf(newVersions, closedVersions), { ordered: false, session });
      }
      if (newPlacements.size > 0) {
        await placements.bulkWrite(writesOf(newPlacements, closedPlacements), { ordered: false, session });
      }
      if (countDocs.size > 0) {
        await counts.bulkWrite(
          [...countDocs.values()].map((row) => ({
            replaceOne: { filter: { _id: row._id }, replacement: row, upsert: true },
          })),
          { ordered: false, session },
        );
      }
    },
  };
}
