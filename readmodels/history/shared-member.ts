import type { VersionWrite } from './port.ts';

/**
 * How a store keeps a version's shared member (VersionWrite.sharedMember, a project's dossier) once per
 * change of it rather than once per version: the version's text without that value, which goes back in
 * at byte `at` when it is read, and a reference to the member's text, stored apart. The SQLite and
 * MongoDB histories both split and decide here, so any batching stores the same texts.
 */

/** The shortest member text kept apart: a shorter one costs more as a row of its own than it saves. */
export const SHARED_TEXT_MIN = 256;

/**
 * A document's member as its last version kept it apart: the value (when known, from this batch), the
 * store's reference to its text, and the text (when read back from the store).
 */
export type SharedBefore<Ref> = { value: unknown; ref: Ref; text: string | null };

/**
 * A version's stored text: the whole document, or (`at`) the document without its shared member's value,
 * which goes back in at byte `at`. `member` is the value's text unless it is `before`'s very value.
 */
export type SplitVersion =
  { doc: string; shared: null } | { doc: string; shared: object; member: string | null; at: number };

export function splitVersion<Ref>(
  v: VersionWrite,
  before: SharedBefore<Ref> | null,
  whole: () => string,
): SplitVersion {
  const key = v.sharedMember;
  const doc = v.doc as Record<string, unknown> | null;
  const value = key === undefined || doc === null || typeof doc !== 'object' ? undefined : doc[key];
  if (value === null || typeof value !== 'object') return { doc: whole(), shared: null };
  const member = before?.value === value ? null : (JSON.stringify(value) as string | undefined);
  if (member === undefined || (member !== null && member.length < SHARED_TEXT_MIN))
    return { doc: whole(), shared: null };
  // The document's text with 0 for the member's value: where that stands (once only) is where the text goes.
  const text = JSON.stringify({ ...doc, [key!]: 0 });
  const marker = `${JSON.stringify(key)}:0`;
  const found = text.indexOf(marker);
  if (found < 0 || text.lastIndexOf(marker) !== found) return { doc: whole(), shared: null };
  const prefix = text.slice(0, found + marker.length - 1);
  return { doc: prefix + text.slice(found + marker.length), shared: value, member, at: Buffer.byteLength(prefix) };
}

/**
 * The member a split version refers to: `before`'s when it is the same value (by identity, or by text
 * against the stored one), else a new text stored by `store` (given the member's text). Null when the
 * version is stored whole.
 */
export function sharedOf<Ref>(
  split: SplitVersion,
  before: SharedBefore<Ref> | null,
  store: (member: string) => Ref,
): SharedBefore<Ref> | null {
  if (split.shared === null) return null;
  const member = split.member;
  if (before !== null && (member === null || member === (before.text ?? JSON.stringify(before.value))))
    return { value: split.shared, ref: before.ref, text: null };
  return { value: split.shared, ref: store(member ?? JSON.stringify(split.shared)), text: null };
}

/** A version's whole text from its stored parts: `doc` with `member` put back at byte `at`. */
export function joinVersion(doc: Uint8Array, member: Uint8Array, at: number): Buffer {
  return Buffer.concat([doc.subarray(0, at), member, doc.subarray(at)]);
}
