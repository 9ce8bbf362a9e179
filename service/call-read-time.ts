/**
 * What a stored call gets at read time: its caller's pnl while it is fresh (24 hours), its tokens'
 * project links, and its served text spliced from the stored one instead of serialised again.
 */
import type { TimeSpan } from './body-cache.ts';
import type { StoredCall } from '../projectors/calls.ts';
import type { CallProject, CallRecord, Project } from '../readmodels/schemas.ts';
import { containerEnd } from './json-text.ts';

const PNL_MAX_AGE_MS = 24 * 3_600_000;

/** What the read-time fields need of a stored call: its tokens and its caller's pnl. */
export type ReadTimeFields = { tokens: StoredCall['tokens']; caller: { pnl: StoredCall['caller']['pnl'] } };

/**
 * The tokens and pnl of a stored call, parsed from their own slices of its text (the thesis, most of
 * the text, is not parsed); null when the text is not laid out as expected (then parse it whole).
 */
export function readTimeFieldsOf(text: string): ReadTimeFields | null {
  const tokensAt = text.indexOf(TOKENS_MEMBER);
  const pnlAt = text.indexOf(PNL_MEMBER);
  if (tokensAt < 0 || pnlAt < 0) return null;
  const arrayAt = tokensAt + TOKENS_MEMBER.length;
  const arrayEnd = text.charCodeAt(arrayAt) === 0x5b ? containerEnd(text, arrayAt) : -1;
  const valueAt = pnlAt + PNL_MEMBER.length;
  let pnl: StoredCall['caller']['pnl'];
  if (text.startsWith('null', valueAt)) pnl = null;
  else {
    const pnlEnd = text.charCodeAt(valueAt) === 0x7b ? containerEnd(text, valueAt) : -1;
    if (pnlEnd < 0) return null;
    pnl = JSON.parse(text.slice(valueAt, pnlEnd)) as StoredCall['caller']['pnl'];
  }
  if (arrayEnd < 0) return null;
  return { tokens: JSON.parse(text.slice(arrayAt, arrayEnd)) as StoredCall['tokens'], caller: { pnl } };
}

const TOKENS_MEMBER = '"tokens":';
const PNL_MEMBER = '"pnl":';

/**
 * The served text of a stored call, made from its stored text (JSON.stringify of `call`) without
 * serialising it again: each token gets `,"project":<link>` before its closing brace, and an aged-out
 * pnl becomes null. The same bytes as JSON.stringify of the served value. A member pattern such as
 * `"tokens":` cannot occur inside a JSON string (a quote there is escaped), so the first one found
 * is the record's own; any surprise (a token that already has a project, a text that is not what the
 * call serialises to) falls back to serialising the served value.
 */
export function servedCallText(
  text: string,
  call: ReadTimeFields,
  pnl: StoredCall['caller']['pnl'],
  links: readonly string[],
  served: () => CallRecord,
): string {
  const tokenTexts = call.tokens.map((t) => JSON.stringify(t));
  const tokensAt = text.indexOf(TOKENS_MEMBER);
  const arrayAt = tokensAt + TOKENS_MEMBER.length;
  const arrayText = `[${tokenTexts.join(',')}]`;
  if (tokensAt < 0 || !text.startsWith(arrayText, arrayAt) || call.tokens.some((t) => 'project' in t))
    return JSON.stringify(served());
  const linked = `[${tokenTexts.map((t, i) => `${t.slice(0, -1)}${t.length > 2 ? ',' : ''}"project":${links[i]}}`).join(',')}]`;
  const splices: { at: number; length: number; text: string }[] = [
    { at: arrayAt, length: arrayText.length, text: linked },
  ];
  if (call.caller.pnl !== null && pnl === null) {
    const pnlAt = text.indexOf(PNL_MEMBER);
    const stored = JSON.stringify(call.caller.pnl);
    if (pnlAt < 0 || !text.startsWith(stored, pnlAt + PNL_MEMBER.length)) return JSON.stringify(served());
    splices.push({ at: pnlAt + PNL_MEMBER.length, length: stored.length, text: 'null' });
  }
  splices.sort((a, b) => a.at - b.at);
  let out = '';
  let from = 0;
  for (const splice of splices) {
    out += text.slice(from, splice.at) + splice.text;
    from = splice.at + splice.length;
  }
  return out + text.slice(from);
}

/**
 * The span of read times around `readAt` in which no call of `calls` has its pnl start or stop being
 * served (a pnl is served from its checkedAt for 24 hours): a page made at `readAt` is the same page
 * at any time in it, but for readAt itself.
 */
export function pnlSpan(calls: readonly ReadTimeFields[], readAt: Date): TimeSpan {
  const at = readAt.getTime();
  let from = -Infinity;
  let until = Infinity;
  for (const call of calls) {
    const checked = call.caller.pnl === null ? NaN : Date.parse(call.caller.pnl.checkedAt);
    if (Number.isNaN(checked)) continue;
    for (const change of [checked, checked + PNL_MAX_AGE_MS]) {
      if (change <= at) from = Math.max(from, change);
      else until = Math.min(until, change);
    }
  }
  return { from, until };
}

export function pnlAtReadTime(pnl: StoredCall['caller']['pnl'], readAt: Date): StoredCall['caller']['pnl'] {
  if (pnl === null) return null;
  const checked = Date.parse(pnl.checkedAt);
  const age = readAt.getTime() - checked;
  // Unknown, future-dated or at least 24 hours old: not served (spec 2.8).
  if (Number.isNaN(checked) || age < 0 || age >= PNL_MAX_AGE_MS) return null;
  return pnl;
}

/** The link a call token gets to a project: relative canonical project URL, also without a dossier. */
export function callProjectOf(project: Project): CallProject {
  return {
    id: project.id,
    href: `/projects/${encodeURIComponent(project.id)}`,
    name: project.name ?? project.dossier?.name ?? null,
    avatar: project.pfp,
    bio: project.bio,
    xHandle: project.handle,
    website: project.identity?.website ?? project.dossier?.links.site ?? null,
    hasDossier: project.dossier !== null,
  };
}
