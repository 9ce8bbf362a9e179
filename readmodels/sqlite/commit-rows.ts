import { OPEN_END, type VersionWrite } from '../history/port.ts';
import { splitVersion, type SharedBefore } from '../history/shared-member.ts';
import type { DocWrite } from '../port.ts';

/**
 * A commit's rows as the SQLite store writes them: every text made, nothing left to serialise, so the
 * rows can be written on this thread or handed to another (build-writer.ts). They are made a part at a
 * time, so a commit of many documents never holds all of its texts at once.
 */

/** A live document's row: id, doc, state, seq, writtenAt, sortKey, facet, keys. */
export type DocRow = [string, string, string, number, string, string, string, string];

/**
 * A version's row (readmodels/history/port.ts): id, seq, validTo, writtenAt, sortKey, facet, doc, at,
 * member; valid in [seq, validTo). `doc` is its text whole (`at` null) or without its shared member,
 * which goes back in at byte `at`; `member` is the member's text, null when it is the very value of the
 * version before it in this commit. (Rows are arrays: they cross to a writer thread for less than objects.)
 */
export type VersionRow = [
  id: string,
  seq: number,
  validTo: number,
  writtenAt: string,
  sortKey: string,
  facet: string,
  doc: string,
  at: number | null,
  member: string | null,
];

export type CommitPart = { kind: 'docs'; rows: DocRow[] } | { kind: 'versions'; rows: VersionRow[] };

/** Rows per part. */
const PART_ROWS = 1000;

function jsonText(value: unknown, what: string): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`${what} is not JSON`);
  return text;
}

/** The documents with versions: whose current version the history reads before their rows come. */
export const versionedIds = (writes: readonly DocWrite[]): string[] =>
  writes.filter((w) => w.versions !== undefined && w.versions.length > 0).map((w) => w.id);

/**
 * The commit's parts: the live documents, then every version in log order (across documents: the
 * history's counts are a timeline, and its delta index grows at its end). A document that is not JSON
 * throws before its part is handed on.
 */
export function* commitParts(writes: readonly DocWrite[]): Generator<CommitPart> {
  for (let from = 0; from < writes.length; from += PART_ROWS) {
    const rows: DocRow[] = [];
    for (const w of writes.slice(from, from + PART_ROWS)) {
      const what = `document ${w.id}`;
      const json = w.json ?? jsonText(w.doc, what);
      rows.push([w.id, json, jsonText(w.state, what), w.seq, w.writtenAt, w.sortKey, w.facet, jsonText(w.keys, what)]);
    }
    yield { kind: 'docs', rows };
  }

  const ordered: { w: DocWrite; v: VersionWrite; validTo: number }[] = [];
  for (const w of writes) {
    const versions = w.versions ?? [];
    // Each version is closed by the document's next write in the batch; its last stays open.
    for (let i = 0; i < versions.length; i++)
      ordered.push({ w, v: versions[i]!, validTo: versions[i + 1]?.seq ?? OPEN_END });
  }
  ordered.sort((a, b) => a.v.seq - b.v.seq);
  // Each document's shared member as its version before kept it apart in this commit (the value, no store reference).
  const before = new Map<string, SharedBefore<null> | null>();
  for (let from = 0; from < ordered.length; from += PART_ROWS) {
    const rows: VersionRow[] = [];
    for (const { w, v, validTo } of ordered.slice(from, from + PART_ROWS)) {
      // The live document is the batch's last version of it: its text is the one its row holds.
      const whole = () => (v.doc === w.doc && w.json !== undefined ? w.json : jsonText(v.doc, 'a versioned document'));
      const split = splitVersion(v, before.get(w.id) ?? null, whole);
      before.set(w.id, split.shared === null ? null : { value: split.shared, ref: null, text: null });
      rows.push([
        w.id,
        v.seq,
        validTo,
        v.writtenAt,
        v.sortKey,
        v.facet,
        split.doc,
        split.shared === null ? null : split.at,
        split.shared === null ? null : split.member,
      ]);
    }
    yield { kind: 'versions', rows };
  }
}
