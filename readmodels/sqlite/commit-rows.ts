import { OPEN_END, type VersionWrite } from '../history/port.ts';
import { splitVersion, type SharedBefore } from '../history/shared-member.ts';
import type { ClosedVersion, DocWrite } from '../port.ts';

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

/** Each document's shared member as its last version kept it apart (the value, no store reference). */
export type SharedChain = Map<string, SharedBefore<null> | null>;

type Ordered = { id: string; v: VersionWrite; validTo: number; whole: () => string };

/** Version rows, a part at a time, in the order given; `before` is updated as each is split. */
function* versionParts(ordered: readonly Ordered[], before: SharedChain): Generator<CommitPart> {
  for (let from = 0; from < ordered.length; from += PART_ROWS) {
    const rows: VersionRow[] = [];
    for (const { id, v, validTo, whole } of ordered.slice(from, from + PART_ROWS)) {
      const split = splitVersion(v, before.get(id) ?? null, whole);
      before.set(id, split.shared === null ? null : { value: split.shared, ref: null, text: null });
      rows.push([
        id,
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

/**
 * The commit's parts: the live documents, then every version in log order (the history's delta index
 * grows at its end). A document that is not JSON throws before its part is handed on. `before`: the
 * chain its versions' split continues (a build's, carried from its staged versions), else this commit's own.
 */
export function* commitParts(writes: readonly DocWrite[], before: SharedChain = new Map()): Generator<CommitPart> {
  for (let from = 0; from < writes.length; from += PART_ROWS) {
    const rows: DocRow[] = [];
    for (const w of writes.slice(from, from + PART_ROWS)) {
      const what = `document ${w.id}`;
      const json = w.json ?? jsonText(w.doc, what);
      rows.push([w.id, json, jsonText(w.state, what), w.seq, w.writtenAt, w.sortKey, w.facet, jsonText(w.keys, what)]);
    }
    yield { kind: 'docs', rows };
  }

  const ordered: Ordered[] = [];
  for (const w of writes) {
    const versions = w.versions ?? [];
    // Each version is closed by the document's next write in the batch; its last stays open.
    for (let i = 0; i < versions.length; i++) {
      const v = versions[i]!;
      // The live document is the batch's last version of it: its text is the one its row holds.
      const whole = () => (v.doc === w.doc && w.json !== undefined ? w.json : jsonText(v.doc, 'a versioned document'));
      ordered.push({ id: w.id, v, validTo: versions[i + 1]?.seq ?? OPEN_END, whole });
    }
  }
  ordered.sort((a, b) => a.v.seq - b.v.seq);
  yield* versionParts(ordered, before);
}

/** The parts of versions staged ahead of their commit (ReadStore.stageVersions), continuing `before`. */
export function stagedParts(versions: readonly ClosedVersion[], before: SharedChain): Generator<CommitPart> {
  return versionParts(
    versions.map(({ id, version, validTo }) => ({
      id,
      v: version,
      validTo,
      whole: () => jsonText(version.doc, 'a versioned document'),
    })),
    before,
  );
}
