import { v5 as uuidv5 } from 'uuid';
import { parseEventData, type EventType } from '../../events/catalogue.ts';
import type { SourcePayload } from '../../events/source.ts';
import { streams } from '../../events/streams.ts';
import type { Harness } from './harness.ts';
import { prng } from './seed.ts';

/**
 * Call, project and pulse fixtures appended exactly as ingest stores them: event type = message
 * type, data = payload + `at`, stream per events/streams.ts. Every payload is checked against the
 * event catalogue first, so a fixture cannot be something ingest would refuse.
 */

const NS = '3b0f7e52-8a41-4c1e-9d6f-2a7b5c9e0d13';

export type CallPayload = SourcePayload<'call.recorded'>;
export type CallTokenPayload = CallPayload['tokens'][number];
type PnlPayload = NonNullable<CallPayload['caller']['pnl']>;

export const callId = (n: number) => uuidv5(`call-${n}`, NS);
export const callerId = (n: number) => uuidv5(`caller-${n}`, NS);

/** Appends one source event, refusing data the catalogue would not accept. */
export async function appendSource(
  h: Harness,
  type: EventType,
  messageId: string,
  stream: string,
  data: Record<string, unknown>,
): Promise<void> {
  const parsed = parseEventData(type, data);
  if (!parsed.ok) throw new Error(`fixture ${type} ${messageId} is not valid: ${parsed.reason}`);
  await h.append(type, messageId, stream, data);
}

/**
 * A thesis of exactly `length` UTF-16 code units, mixing what makes JSON sizes differ from text
 * lengths: 3-byte CJK, 4-byte emoji (two units), quotes, backslashes, newlines and control
 * characters (six bytes each once escaped). `style: 'escapes'` is dominated by the escaped kinds.
 */
export function thesisText(length: number, seed: number, style: 'mixed' | 'escapes' | 'ascii' = 'mixed'): string {
  const rand = prng(seed);
  const pieces =
    style === 'ascii'
      ? ['alpha ', 'beta ', 'gamma. ', 'delta, ', 'liquidity ']
      : style === 'escapes'
        ? ['"', '\\', '\n', '\u0001', '\t', '"q"', '\\n', '\u001f']
        : ['价格', '流动性', '🚀', '"', '\\', '\n', 'é', 'mcap ', '\u0002', 'token ', '✓'];
  let text = '';
  while (text.length < length) {
    const piece = pieces[Math.floor(rand() * pieces.length)]!;
    text += piece;
  }
  text = text.slice(0, length);
  // Never end on half a surrogate pair: replace it with a one-unit character.
  const last = text.charCodeAt(text.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) text = `${text.slice(0, -1)}x`;
  return text;
}

export function token(i: number, options: Partial<CallTokenPayload> = {}): CallTokenPayload {
  return {
    key: options.key ?? 'base',
    chain: options.chain ?? 'base',
    contract: options.contract ?? `0x${(i + 1).toString(16).padStart(40, '0')}`,
    name: options.name ?? `Token ${i} 代币`,
    symbol: options.symbol === undefined ? `T${i}` : options.symbol,
    logoUrl: options.logoUrl === undefined ? `https://img.example/t${i}.png` : options.logoUrl,
    ggXHandle: options.ggXHandle === undefined ? `tok${i}` : options.ggXHandle,
    ggWebsite: options.ggWebsite === undefined ? `https://t${i}.example` : options.ggWebsite,
    description:
      options.description === undefined
        ? `Token ${i}: "quoted" \\ back\nline — ${'描述'.repeat(20)}`
        : options.description,
  };
}

export function pnl(checkedAt: string, realizedUsd = 1234.5): PnlPayload {
  return { realizedUsd, realizedPercent: -3.25, period: '7d', checkedAt, closedTrades: 12, skippedUnknownCostBasis: 1 };
}

export type CallOptions = {
  createdAt: string;
  updatedAt?: string;
  tokens?: CallTokenPayload[] | number;
  thesis?: string;
  pnl?: PnlPayload | null;
  callerN?: number;
};

export function makeCall(n: number, options: CallOptions): CallPayload {
  const tokens =
    typeof options.tokens === 'number' || options.tokens === undefined
      ? Array.from({ length: options.tokens ?? 1 }, (_, i) => token(n * 100 + i))
      : options.tokens;
  const callerN = options.callerN ?? n % 7;
  return {
    id: callId(n),
    createdAt: options.createdAt,
    updatedAt: options.updatedAt ?? options.createdAt,
    sourceUrl: `https://calltracker.example/calls/${n}`,
    thesisText: options.thesis ?? `Call ${n}: thesis.`,
    caller: {
      id: callerId(callerN),
      pseudo: `caller${callerN}`,
      name: `Caller ${callerN}`,
      profileUrl: `https://calltracker.example/u/${callerN}`,
      avatarUrl: null,
      subscribersCount: 100 + callerN,
      xHandle: `caller${callerN}`,
      bio: null,
      pnl: options.pnl === undefined ? null : options.pnl,
    },
    tokens,
  };
}

export async function recordCall(
  h: Harness,
  call: CallPayload,
  messageId = `rec-${call.id}-${call.updatedAt}`,
): Promise<void> {
  await appendSource(h, 'call.recorded', messageId, streams.call(call.id), { ...call, at: call.updatedAt });
}

export async function suppressCall(h: Harness, id: string, at: string, messageId = `sup-${id}-${at}`): Promise<void> {
  await appendSource(h, 'call.suppressed', messageId, streams.call(id), { callId: id, at });
}

export async function restoreCall(h: Harness, id: string, at: string, messageId = `res-${id}-${at}`): Promise<void> {
  await appendSource(h, 'call.restored', messageId, streams.call(id), { callId: id, at });
}

export async function callsCollected(h: Harness, data: SourcePayload<'calls.collected'>, at: string): Promise<void> {
  await appendSource(h, 'calls.collected', `col-${at}`, streams.callsCollector(), { ...data, at });
}

export type ProjectFixture = {
  projectId: string;
  at: string;
  handle?: string | null;
  name?: string | null;
  pfp?: string | null;
  bio?: string | null;
  identity?: SourcePayload<'project.sighted'>['identity'];
};

export async function sightProject(
  h: Harness,
  p: ProjectFixture,
  messageId = `sight-${p.projectId}-${p.at}`,
): Promise<void> {
  const { projectId, at, ...fields } = p;
  await appendSource(h, 'project.sighted', messageId, streams.project(projectId), { projectId, at, ...fields });
}

export function identity(
  fields: Partial<NonNullable<ProjectFixture['identity']>>,
): NonNullable<ProjectFixture['identity']> {
  return { kind: 'contract', handle: null, website: null, chain: null, contract: null, ...fields };
}

export async function writeDossier(
  h: Harness,
  projectId: string,
  at: string,
  fields: {
    name?: string;
    site?: string | null;
    token?: { ticker: string | null; contract: string | null; chain: string | null } | null;
  } = {},
): Promise<void> {
  await appendSource(h, 'dossier.written', `dossier-${projectId}-${at}`, streams.project(projectId), {
    projectId,
    at,
    dossier: {
      name: fields.name ?? projectId,
      category: 'defi',
      description: 'd',
      stage: 'live',
      confidence: 'medium',
      chains: [],
      founders: [],
      backers: [],
      notable: [],
      token: fields.token ?? null,
      links: { site: fields.site ?? null, docs: null, github: null },
      unverified: [],
      onchain: null,
    },
  });
}

export type CardFixture = SourcePayload<'pulse.published'>['card'];

export function card(beat: string, n: number, status: 'live' | 'quiet' = 'live'): CardFixture {
  return {
    id: `card-${beat}-${n}`,
    status,
    asOf: `2026-11-2${n % 10}T08:00:00Z`,
    beat,
    headline: status === 'quiet' ? `Nothing moved on ${beat}` : `${beat} headline ${n}`,
    lede: `Lede ${n}`,
    plain: status === 'quiet' ? null : `Plain ${n}`,
    bullets: status === 'quiet' ? [] : [`bullet ${n}a`, `bullet ${n}b`],
    receipts: status === 'quiet' ? [] : [{ label: 'post', href: `https://x.com/i/status/${n}` }],
  };
}

export async function publishCard(h: Harness, c: CardFixture, at: string): Promise<void> {
  await appendSource(h, 'pulse.published', `card-${c.id}-${at}`, streams.pulse(c.beat), { card: c, at });
}
