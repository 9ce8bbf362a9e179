import { v5 as uuidv5 } from 'uuid';
import { BEATS } from '../../config/beats.ts';
import type { SourcePayload } from '../../events/source.ts';
import { THESIS_TEXT_MAX, TOKENS_PER_CALL_MAX } from '../../readmodels/schemas.ts';
import { DAY_MS, EPOCH_MS, FIXTURE_CHAINS, HOUR_MS, iso, type GenerateContext, type Timed } from './context.ts';
import { projectProfile } from './projects.ts';
import { randomFor, type Random } from './random.ts';
import { CHAINS, contractFor, projectName, prose, shortLine } from './vocabulary.ts';

/**
 * Call records, their edits, suppressions and restorations, collector checkpoints, the hot
 * contract's calls and pulse cards. Each is a separate stream already in time order; call k is a
 * pure function of (seed, k), so an edit days later regenerates the call instead of storing it.
 */

type CallRecord = SourcePayload<'call.recorded'>;
type CallToken = CallRecord['tokens'][number];
type Caller = CallRecord['caller'];
type PnlKind = 'fresh' | 'stale' | 'future' | 'none';

/** Namespace of the generator's call and caller UUIDs (v5, so the same seed gives the same ids). */
const GENERATOR_NAMESPACE = 'b3f0c1d2-6a4e-5f70-9b8c-1d2e3f405162';
const CALLER_POOL = 40;
const PNL_KINDS: readonly PnlKind[] = ['fresh', 'stale', 'future', 'none'];

export function callId(seed: number, k: number): string {
  return uuidv5(`s${seed}|call|${k}`, GENERATOR_NAMESPACE);
}

export function hotCallId(seed: number, m: number): string {
  return uuidv5(`s${seed}|hot-call|${m}`, GENERATOR_NAMESPACE);
}

/** Spreads `count` items evenly over the period; item n sits in the middle of its share. */
function spread(ctx: GenerateContext, n: number, count: number): number {
  return EPOCH_MS + Math.floor(((2 * n + 1) * (ctx.endMs - EPOCH_MS)) / (2 * count));
}

function caller(ctx: GenerateContext, c: number, at: number, pnl: PnlKind, r: Random): Caller {
  const profile = randomFor(ctx.seed, 'caller', c);
  const { slug } = projectName(profile);
  const pseudo = `${slug}_caller${c}`;
  const checkedAt =
    pnl === 'fresh'
      ? at - r.int(10, 1200) * 60_000
      : pnl === 'stale'
        ? at - r.int(25, 240) * HOUR_MS
        : at + 365 * DAY_MS + r.int(0, 1000) * HOUR_MS;
  return {
    id: uuidv5(`s${ctx.seed}|caller|${c}`, GENERATOR_NAMESPACE),
    pseudo,
    name: `Caller ${c} (${slug})`,
    profileUrl: `https://calltracker.example/u/${pseudo}`,
    avatarUrl: c % 5 === 2 ? null : `https://calltracker.example/avatars/${c}.png`,
    subscribersCount: c % 7 === 3 ? null : profile.int(0, 250_000),
    xHandle: c % 3 === 1 ? null : pseudo,
    bio: c % 4 === 0 ? null : shortLine(profile),
    pnl:
      pnl === 'none'
        ? null
        : {
            realizedUsd: r.chance(0.1) ? 0 : r.int(-500_000, 2_000_000) / 100,
            realizedPercent: r.int(-9000, 25_000) / 100,
            period: '7d',
            checkedAt: iso(checkedAt),
            closedTrades: r.int(0, 200),
            skippedUnknownCostBasis: r.int(0, 10),
          },
  };
}

function tokenFields(chain: string, contract: string, name: string, symbol: string | null, r: Random): CallToken {
  return {
    key: `${chain}:${contract}`,
    chain,
    contract,
    name,
    symbol,
    logoUrl: r.chance(0.7) ? `https://calltracker.example/logos/${contract.slice(0, 12)}.png` : null,
    ggXHandle: null,
    ggWebsite: null,
    description: r.chance(0.5) ? shortLine(r) : null,
  };
}

function unknownToken(r: Random): CallToken {
  const chain = r.pick(CHAINS);
  const { name } = projectName(r);
  return tokenFields(chain, contractFor(chain, r), name, r.chance(0.8) ? name.slice(0, 4).toUpperCase() : null, r);
}

/**
 * A token that links to a project (its identity contract or dossier token), to two projects
 * (the double fixture), or to none.
 */
function pickToken(ctx: GenerateContext, r: Random): CallToken {
  const roll = r.next();
  if (roll < 0.1) return tokenFields(FIXTURE_CHAINS.double, ctx.contracts.double, 'Double Listed', 'DBL', r);
  if (roll < 0.5) {
    const p = projectProfile(ctx, r.int(0, ctx.projects - 1));
    const token = p.dossier?.token;
    const target =
      p.contract && p.chain
        ? { chain: p.chain, contract: p.contract }
        : token?.contract && token.chain
          ? { chain: token.chain, contract: token.contract }
          : null;
    if (target) {
      const t = tokenFields(target.chain, target.contract, p.name, token?.ticker ?? null, r);
      return { ...t, ggXHandle: p.handle?.replace(/^@+/, '') ?? null, ggWebsite: p.website };
    }
  }
  return unknownToken(r);
}

function tokensFor(ctx: GenerateContext, count: number, r: Random): CallToken[] {
  const tokens: CallToken[] = [];
  const keys = new Set<string>();
  while (tokens.length < count) {
    let token = pickToken(ctx, r);
    if (keys.has(token.key)) token = unknownToken(r);
    if (keys.has(token.key)) continue;
    keys.add(token.key);
    tokens.push(token);
  }
  return tokens;
}

/** Call k as first recorded. */
export function callRecord(ctx: GenerateContext, k: number): { at: number; record: CallRecord } {
  const r = randomFor(ctx.seed, 'call', k);
  const at = spread(ctx, k, ctx.calls);
  const full = k % 50 === 7;
  const overLong = k % 97 === 13;
  const tokenCount = full ? TOKENS_PER_CALL_MAX : k % 10 === 0 ? r.int(1, 8) : r.int(1, 3);
  const thesisLength = full
    ? r.int(THESIS_TEXT_MAX - 150, THESIS_TEXT_MAX)
    : overLong
      ? r.int(THESIS_TEXT_MAX + 1, THESIS_TEXT_MAX + 4000)
      : r.int(40, 1000);
  const createdAt = at - r.int(1, 180) * 60_000;
  const record: CallRecord = {
    id: callId(ctx.seed, k),
    createdAt: iso(createdAt),
    updatedAt: iso(createdAt),
    sourceUrl: `https://calltracker.example/calls/s${ctx.seed}-${k}`,
    thesisText: prose(r, thesisLength),
    caller: caller(ctx, r.int(0, CALLER_POOL - 1), at, PNL_KINDS[k % PNL_KINDS.length]!, r),
    tokens: tokensFor(ctx, tokenCount, r),
  };
  return { at, record };
}

const EDIT_DELAY_MS = 26 * HOUR_MS;
const SUPPRESS_DELAY_MS = 3 * HOUR_MS;
const RESTORE_DELAY_MS = 30 * HOUR_MS;

export const isEdited = (k: number) => k % 9 === 4;
export const isSuppressed = (k: number) => k % 13 === 6;
export const isRestored = (k: number) => k % 26 === 6;

export function* callMessages(ctx: GenerateContext): Generator<Timed> {
  for (let k = 0; k < ctx.calls; k++) {
    const { at, record } = callRecord(ctx, k);
    yield { key: at, message: { type: 'call.recorded', id: `s${ctx.seed}-call-${k}`, at: iso(at), data: record } };
  }
}

/** The same call id re-recorded a day later: later updatedAt, amended text, sometimes fewer tokens. */
export function* callEdits(ctx: GenerateContext): Generator<Timed> {
  for (let k = 0; k < ctx.calls; k++) {
    if (!isEdited(k)) continue;
    const { at: recordedAt, record } = callRecord(ctx, k);
    const at = recordedAt + EDIT_DELAY_MS;
    if (at >= ctx.endMs) break;
    const r = randomFor(ctx.seed, 'call-edit', k);
    const edited: CallRecord = {
      ...record,
      updatedAt: iso(at - r.int(1, 30) * 60_000),
      thesisText: `${record.thesisText}\n\nEdit: ${shortLine(r)}`,
      caller: caller(ctx, r.int(0, CALLER_POOL - 1), at, 'fresh', r),
      tokens: record.tokens.length > 1 ? record.tokens.slice(0, -1) : record.tokens,
    };
    yield {
      key: at,
      message: { type: 'call.recorded', id: `s${ctx.seed}-call-${k}-edit1`, at: iso(at), data: edited },
    };
  }
}

export function* callSuppressions(ctx: GenerateContext): Generator<Timed> {
  for (let k = 0; k < ctx.calls; k++) {
    if (!isSuppressed(k)) continue;
    const at = spread(ctx, k, ctx.calls) + SUPPRESS_DELAY_MS;
    if (at >= ctx.endMs) break;
    yield {
      key: at,
      message: {
        type: 'call.suppressed',
        id: `s${ctx.seed}-suppress-${k}`,
        at: iso(at),
        data: { callId: callId(ctx.seed, k) },
      },
    };
  }
}

export function* callRestorations(ctx: GenerateContext): Generator<Timed> {
  for (let k = 0; k < ctx.calls; k++) {
    if (!isRestored(k)) continue;
    const at = spread(ctx, k, ctx.calls) + RESTORE_DELAY_MS;
    if (at >= ctx.endMs) break;
    yield {
      key: at,
      message: {
        type: 'call.restored',
        id: `s${ctx.seed}-restore-${k}`,
        at: iso(at),
        data: { callId: callId(ctx.seed, k) },
      },
    };
  }
}

/** `--hot-contract-calls`: small calls that all name the hot fixture contract (and sometimes one more token). */
export function* hotContractCalls(ctx: GenerateContext): Generator<Timed> {
  const count = ctx.hotContractCalls;
  for (let m = 0; m < count; m++) {
    const r = randomFor(ctx.seed, 'hot-call', m);
    const at = spread(ctx, m, count);
    const createdAt = at - r.int(1, 60) * 60_000;
    const hot = tokenFields(FIXTURE_CHAINS.hot, ctx.contracts.hot, 'Hot Contract', 'HOT', r);
    const tokens = m % 3 === 0 ? [hot, unknownToken(r)] : [hot];
    const record: CallRecord = {
      id: hotCallId(ctx.seed, m),
      createdAt: iso(createdAt),
      updatedAt: iso(createdAt),
      sourceUrl: `https://calltracker.example/calls/s${ctx.seed}-hot-${m}`,
      thesisText: prose(r, r.int(40, 240)),
      caller: caller(ctx, r.int(0, CALLER_POOL - 1), at, PNL_KINDS[m % PNL_KINDS.length]!, r),
      tokens,
    };
    yield { key: at, message: { type: 'call.recorded', id: `s${ctx.seed}-hot-${m}`, at: iso(at), data: record } };
  }
}

const COLLECT_EVERY_MS = 6 * HOUR_MS;

/** Collector checkpoints every 6 h: the first with nothing known, every fifth attempt incomplete. */
export function* collectorCheckpoints(ctx: GenerateContext): Generator<Timed> {
  const complete = (q: number) => q > 0 && q % 5 !== 3;
  for (let q = 0; ; q++) {
    const at = EPOCH_MS + q * COLLECT_EVERY_MS + 30 * 60_000;
    if (at >= ctx.endMs) return;
    let lastComplete: number | null = null;
    for (let back = q; back > 0 && back >= q - 1; back--) {
      if (complete(back)) {
        lastComplete = back;
        break;
      }
    }
    const data: SourcePayload<'calls.collected'> = {
      checkedAt: iso(at),
      completeAt: lastComplete === null ? null : iso(EPOCH_MS + lastComplete * COLLECT_EVERY_MS + 30 * 60_000),
      lastAttemptComplete: q === 0 ? null : complete(q),
    };
    yield { key: at, message: { type: 'calls.collected', id: `s${ctx.seed}-collected-${q}`, at: iso(at), data } };
  }
}

/** Cards for every beat but the last configured one, every third day; some quiet. */
export function* pulseCards(ctx: GenerateContext): Generator<Timed> {
  const beats = BEATS.slice(0, -1);
  for (let day = 0; day < ctx.days; day += 3) {
    for (const [b, beat] of beats.entries()) {
      const at = EPOCH_MS + day * DAY_MS + 9 * HOUR_MS + b * 20 * 60_000;
      if (at >= ctx.endMs) return;
      const r = randomFor(ctx.seed, 'pulse', beat.id, day);
      const quiet = (day / 3 + b) % 4 === 3;
      const card: SourcePayload<'pulse.published'>['card'] = {
        id: `card-s${ctx.seed}-${beat.id}-d${day}`,
        status: quiet ? 'quiet' : 'live',
        asOf: iso(at - 15 * 60_000),
        beat: beat.id,
        headline: quiet ? `Quiet on ${beat.label.toLowerCase()}` : `${beat.label}: ${shortLine(r)}`,
        lede: quiet ? 'Nothing moved enough to write up.' : prose(r, r.int(120, 300)),
        plain: quiet || r.chance(0.3) ? null : shortLine(r),
        bullets: quiet ? [] : Array.from({ length: r.int(1, 4) }, () => shortLine(r)),
        receipts: quiet
          ? []
          : Array.from({ length: r.int(1, 3) }, (_, n) => ({
              label: `post ${n + 1}`,
              href: `https://x.com/i/status/${r.int(1e9, 2e9)}${n}`,
            })),
      };
      yield {
        key: at,
        message: { type: 'pulse.published', id: `s${ctx.seed}-pulse-${beat.id}-d${day}`, at: iso(at), data: { card } },
      };
    }
  }
}
