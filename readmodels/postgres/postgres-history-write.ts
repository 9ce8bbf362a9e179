/**
 * What a commit writes to the PostgreSQL history (postgres-history.ts), planned from its versions and
 * what the model last had of its documents, so that the commit is one read and one write statement
 * whatever its size. The same decisions as the SQLite and MongoDB histories: a version closes its
 * document's version before it, a move in the listing (sort key or facet) closes its placement and opens
 * one, a change of facet moves the facets' counts at that position, and a shared member is kept once per
 * change of it (history/shared-member.ts).
 */
import { OPEN_END, type VersionWrite } from '../history/port.ts';
import { sharedOf, splitVersion, type SharedBefore } from '../history/shared-member.ts';
import type { DocWrite } from '../port.ts';
import { joinTexts } from './postgres-joined-texts.ts';

/** A document's current version as stored: its start, place in the listing, and shared text if any. */
export type StoredCurrent = {
  id: string;
  from: number;
  sortKey: string;
  facet: string;
  /** `from` of the placement the version belongs to. */
  placed: number;
  /** The version whose shared text it refers to, and that text. */
  sharedFrom: number | null;
  sharedText: string | null;
};

type NewVersion = {
  id: string;
  from: number;
  to: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  placed: number;
  sharedFrom: number | null;
  /** Where the shared text goes back into `doc`, in characters (code points, as PostgreSQL's text functions count). */
  sharedAt: number | null;
  doc: string;
};
type NewPlacement = { id: string; from: number; to: number; sortKey: string; facet: string };
type Closing = { id: string; from: number; to: number };

export type HistoryWritePlan = {
  closedVersions: Closing[];
  versions: NewVersion[];
  closedPlacements: Closing[];
  placements: NewPlacement[];
  texts: { id: string; from: number; text: string }[];
  /** Each facet's number after every position that moved it. */
  counts: { facet: string; at: number; n: number }[];
};

/** The versions `writes` carry after `previousCheckpoint`, in log order across documents. */
export function versionsToRecord(
  writes: readonly DocWrite[],
  previousCheckpoint: number,
): { id: string; w: DocWrite; v: VersionWrite }[] {
  const ordered: { id: string; w: DocWrite; v: VersionWrite }[] = [];
  // A write at or before the checkpoint is one the store already applied (and the model recorded, or
  // began after it: recordedFrom): a batch committed again changes nothing.
  for (const w of writes)
    for (const v of w.versions ?? []) if (v.seq > previousCheckpoint) ordered.push({ id: w.id, w, v });
  // Each document's own come oldest first; the counts move in log order across them (a stable sort).
  return ordered.sort((a, b) => a.v.seq - b.v.seq);
}

/** The number of characters (code points) in the first `bytes` UTF-8 bytes of `text`. */
export function charsInBytes(text: string, bytes: number): number {
  let chars = 0;
  for (let i = 0, b = 0; b < bytes; chars++) {
    const c = text.codePointAt(i)!;
    b += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    i += c < 0x10000 ? 1 : 2;
  }
  return chars;
}

/**
 * The rows a commit writes, from its versions (`versionsToRecord`), its documents' current versions as
 * stored and every facet's latest count.
 */
export function planHistoryWrite(
  ordered: readonly { id: string; w: DocWrite; v: VersionWrite }[],
  stored: readonly StoredCurrent[],
  latestCounts: ReadonlyMap<string, number>,
): HistoryWritePlan {
  type Latest = { from: number; sortKey: string; facet: string; placed: number };
  const latest = new Map<string, Latest>();
  const sharedBefore = new Map<string, SharedBefore<number> | null>();
  for (const row of stored) {
    latest.set(row.id, row);
    if (row.sharedFrom !== null && row.sharedText !== null)
      sharedBefore.set(row.id, { value: undefined, ref: row.sharedFrom, text: row.sharedText });
  }
  const facetCounts = new Map(latestCounts);
  // New rows are closed in place when a later write of the commit ends them; stored ones by an update.
  const versions = new Map<string, NewVersion>();
  const placements = new Map<string, NewPlacement>();
  const plan: HistoryWritePlan = {
    closedVersions: [],
    versions: [],
    closedPlacements: [],
    placements: [],
    texts: [],
    counts: [],
  };
  const counts = new Map<string, { facet: string; at: number; n: number }>();
  const move = (facet: string, at: number, by: 1 | -1) => {
    const n = (facetCounts.get(facet) ?? 0) + by;
    facetCounts.set(facet, n);
    counts.set(`${at} ${facet}`, { facet, at, n });
  };
  const key = (id: string, from: number) => `${from} ${id}`;
  const close = <R extends { to: number }>(
    made: Map<string, R>,
    closed: Closing[],
    id: string,
    from: number,
    to: number,
  ) => {
    const row = made.get(key(id, from));
    if (row) row.to = to;
    else closed.push({ id, from, to });
  };

  for (const { id, w, v } of ordered) {
    const previous = latest.get(id);
    // A write already recorded (the same batch committed again) changes nothing.
    if (previous && previous.from >= v.seq) continue;
    if (previous) close(versions, plan.closedVersions, id, previous.from, v.seq);
    const stays = previous !== undefined && previous.sortKey === v.sortKey && previous.facet === v.facet;
    const placed = stays ? previous.placed : v.seq;
    const before = sharedBefore.get(id) ?? null;
    const split = splitVersion(v, before, () => {
      // The live document is the batch's last version of it: its text is the one the live store wrote.
      const json = v.doc === w.doc ? (w.json ?? JSON.stringify(v.doc)) : JSON.stringify(v.doc);
      if (json === undefined) throw new TypeError(`document ${id} is not JSON`);
      return json;
    });
    const shared = sharedOf(split, before, (member) => {
      plan.texts.push({ id, from: v.seq, text: member });
      return v.seq;
    });
    sharedBefore.set(id, shared);
    versions.set(key(id, v.seq), {
      id,
      from: v.seq,
      to: OPEN_END,
      writtenAt: v.writtenAt,
      sortKey: v.sortKey,
      facet: v.facet,
      placed,
      sharedFrom: shared === null ? null : shared.ref,
      sharedAt: shared === null || split.shared === null ? null : charsInBytes(split.doc, split.at),
      doc: split.doc,
    });
    latest.set(id, { from: v.seq, sortKey: v.sortKey, facet: v.facet, placed });
    if (stays) continue;
    // It moved in the listing (or appeared): a new placement, and the facets' counts follow.
    if (previous) {
      close(placements, plan.closedPlacements, id, previous.placed, v.seq);
      if (previous.facet !== v.facet) move(previous.facet, v.seq, -1);
    }
    if (!previous || previous.facet !== v.facet) move(v.facet, v.seq, 1);
    placements.set(key(id, v.seq), { id, from: v.seq, to: OPEN_END, sortKey: v.sortKey, facet: v.facet });
  }
  plan.versions = [...versions.values()];
  plan.placements = [...placements.values()];
  plan.counts = [...counts.values()];
  return plan;
}

/** The parameters of `historySql(…).write`: every row travels in arrays, one per column (texts joined). */
export function writeParams(collection: string, plan: HistoryWritePlan): unknown[] {
  const { closedVersions: cv, versions: v, closedPlacements: cp, placements: p, texts: t, counts: c } = plan;
  return [
    collection,
    ...[cv.map((r) => r.id), cv.map((r) => r.from), cv.map((r) => r.to)],
    ...[v.map((r) => r.id), v.map((r) => r.from), v.map((r) => r.to), v.map((r) => r.writtenAt)],
    ...[v.map((r) => r.sortKey), v.map((r) => r.facet), v.map((r) => r.placed), v.map((r) => r.sharedFrom)],
    ...[v.map((r) => r.sharedAt), joinTexts(v.map((r) => r.doc))],
    ...[cp.map((r) => r.id), cp.map((r) => r.from), cp.map((r) => r.to)],
    ...[p.map((r) => r.id), p.map((r) => r.from), p.map((r) => r.to), p.map((r) => r.sortKey), p.map((r) => r.facet)],
    ...[t.map((r) => r.id), t.map((r) => r.from), joinTexts(t.map((r) => r.text))],
    ...[c.map((r) => r.facet), c.map((r) => r.at), c.map((r) => r.n)],
  ];
}
