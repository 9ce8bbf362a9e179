/**
 * Which top-level fields of a project differ between two versions: one rule, "their JSON texts
 * differ", decided on the documents (jsonEqual) or, for stored versions, on their UTF-8 texts.
 */
import { jsonEqual } from '../projectors/json-equal.ts';
import type { ProjectFieldName } from '../readmodels/history-schemas.ts';
import type { Project } from '../readmodels/schemas.ts';
import { membersOf } from './json-text.ts';

const BACKSLASH = 0x5c;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Top-level fields whose values differ (compared as their JSON texts would be, without making them). */
export function differingFields(before: Project | null, after: Project): ProjectFieldName[] {
  const fields = Object.keys(after) as ProjectFieldName[];
  if (before === null) return fields;
  return fields.filter((f) => !jsonEqual(before[f], after[f]));
}

/** A stored version: the document and the text it was stored as. */
export type StoredVersion = { doc: Project; utf8: Uint8Array };

/**
 * differingFields of two stored versions, named from their texts (by hand instead of JSON.parse of
 * both: parsing them was most of a diff page's server time); from the documents only when a text is
 * not as JSON.stringify writes it.
 */
export function differingStoredFields(before: StoredVersion | null, after: StoredVersion): ProjectFieldName[] {
  const named = differingMembers(before?.utf8 ?? null, after.utf8) as ProjectFieldName[] | null;
  return named ?? differingFields(before?.doc ?? null, after.doc);
}

function sameBytes(a: Uint8Array, aFrom: number, aTo: number, b: Uint8Array, bFrom: number, bTo: number): boolean {
  if (aTo - aFrom !== bTo - bFrom) return false;
  for (let i = 0; i < aTo - aFrom; i++) if (a[aFrom + i] !== b[bFrom + i]) return false;
  return true;
}

function keyName(text: Uint8Array, from: number, to: number): string {
  let name = '';
  for (let i = from + 1; i < to - 1; i++) {
    const c = text[i]!;
    // An escape or a character past ASCII: the key as JSON reads it.
    if (c === BACKSLASH || c > 0x7f) return JSON.parse(utf8.decode(text.subarray(from, to))) as string;
    name += String.fromCharCode(c);
  }
  return name;
}

/**
 * The names of `after`'s top-level members whose value text differs from `before`'s member of the
 * same name (missing there too), in `after`'s order; every name when `before` is null. For texts
 * JSON.stringify wrote, this is what comparing the JSON texts of the parsed values says. Null when
 * either is not an object text as JSON.stringify writes it.
 */
export function differingMembers(before: Uint8Array | null, after: Uint8Array): string[] | null {
  const a = membersOf(after);
  if (a === null) return null;
  const names: string[] = [];
  if (before === null) {
    for (let k = 0; k < a.length; k += 4) names.push(keyName(after, a[k]!, a[k + 1]!));
    return names;
  }
  const b = membersOf(before);
  if (b === null) return null;
  for (let k = 0; k < a.length; k += 4) {
    // Both usually list their members in the same order: the search starts at the same place.
    let found = -1;
    for (let j = 0; j < b.length; j += 4) {
      const at = (k + j) % b.length;
      if (sameBytes(after, a[k]!, a[k + 1]!, before, b[at]!, b[at + 1]!)) {
        found = at;
        break;
      }
    }
    if (found < 0 || !sameBytes(after, a[k + 2]!, a[k + 3]!, before, b[found + 2]!, b[found + 3]!))
      names.push(keyName(after, a[k]!, a[k + 1]!));
  }
  return names;
}
