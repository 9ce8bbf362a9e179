import type { SourceType } from '../../events/source.ts';
import type { SourceMessage } from '../../ingest/messages.ts';

/** One valid message of every source type, as an upstream would send it. */

export const THESIS = 'Private thesis: accumulate under the radar before the listing.';
export const CALL_ID = '2b7e1516-28ae-4d2a-a6f1-9c1f2d3e4a5b';

const at = '2026-11-20T08:00:00Z';

export const examples: { [T in SourceType]: Extract<SourceMessage, { type: T }> } = {
  'project.sighted': {
    type: 'project.sighted',
    id: 'sight-1',
    at,
    data: {
      projectId: 'p1',
      handle: '@AlphaLabs',
      identity: { kind: 'x', handle: 'AlphaLabs', website: null, chain: null, contract: null },
      name: 'Alpha Labs',
      pfp: null,
      fol: 1200,
      why: 'Fast follower growth',
      bio: null,
    },
  },
  'rival.listed': { type: 'rival.listed', id: 'rival-1', at, data: { projectId: 'p1' } },
  'followers.observed': {
    type: 'followers.observed',
    id: 'fol-1',
    at,
    data: {
      projectId: 'p1',
      source: 'followerscope',
      handle: '@AlphaLabs',
      value: 1250,
      checkedAt: '2026-11-20T07:30:00Z',
    },
  },
  'dossier.written': {
    type: 'dossier.written',
    id: 'dossier-1',
    at,
    data: {
      projectId: 'p1',
      dossier: {
        name: 'Alpha Labs',
        category: 'dex',
        description: 'A swap.',
        stage: 'live',
        confidence: 'medium',
        chains: ['base'],
        founders: [{ name: 'Ann', handle: null, note: null }],
        backers: [],
        notable: [],
        token: { ticker: 'ALP', contract: '0x1111111111111111111111111111111111111111', chain: 'base' },
        links: { site: 'https://alpha.example', docs: null, github: null },
        unverified: [],
        onchain: null,
      },
    },
  },
  'onchain.checked': {
    type: 'onchain.checked',
    id: 'onchain-1',
    at,
    data: {
      projectId: 'p1',
      onchain: {
        symbol: 'ALP',
        mcap: 1_000_000,
        holders: 900,
        liquidity: null,
        change24h: -0.12,
        buys24h: 10,
        sells24h: 12,
        top10Rate: 0.4,
        mintRenounced: true,
        lpLocked: null,
        honeypot: false,
      },
    },
  },
  'calltracker.checked': {
    type: 'calltracker.checked',
    id: 'ct-1',
    at,
    data: {
      projectId: 'p1',
      status: 'matched',
      historyComplete: true,
      posts: 3,
      firstAt: '2026-11-01T00:00:00Z',
      firstMcap: 100_000,
      firstCaller: 'caller_1',
      latestAt: '2026-11-19T00:00:00Z',
      mcap: 50_000,
    },
  },
  'vote.cast': {
    type: 'vote.cast',
    id: 'vote-1',
    at,
    data: { projectId: 'p1', voterId: 'v1', name: 'Vee', avatar: null, direction: 'up' },
  },
  'research.updated': {
    type: 'research.updated',
    id: 'research-1',
    at,
    data: { projectId: 'p1', state: 'budget_wait', nextEligibleAt: '2026-11-21T00:00:00Z' },
  },
  'ask.updated': {
    type: 'ask.updated',
    id: 'ask-1',
    at,
    data: { projectId: 'p1', askId: 'a1', status: 'answered', answer: 'Yes.' },
  },
  'call.recorded': {
    type: 'call.recorded',
    id: 'call-1',
    at,
    data: {
      id: CALL_ID,
      createdAt: '2026-11-20T07:00:00Z',
      updatedAt: '2026-11-20T07:00:00Z',
      sourceUrl: 'https://calltracker.example/calls/1',
      thesisText: THESIS,
      caller: {
        id: '9c1f2d3e-4a5b-4d2a-a6f1-2b7e151628ae',
        pseudo: 'caller_1',
        name: 'Caller One',
        profileUrl: 'https://calltracker.example/u/caller_1',
        avatarUrl: null,
        subscribersCount: 10,
        xHandle: null,
        bio: null,
        pnl: null,
      },
      tokens: [
        {
          key: 'base:0x1111111111111111111111111111111111111111',
          chain: 'base',
          contract: '0x1111111111111111111111111111111111111111',
          name: 'Alpha',
          symbol: 'ALP',
          logoUrl: null,
          ggXHandle: null,
          ggWebsite: null,
          description: null,
        },
      ],
    },
  },
  'call.suppressed': { type: 'call.suppressed', id: 'sup-1', at, data: { callId: CALL_ID } },
  'call.restored': { type: 'call.restored', id: 'res-1', at, data: { callId: CALL_ID } },
  'calls.collected': {
    type: 'calls.collected',
    id: 'col-1',
    at,
    data: { checkedAt: at, completeAt: null, lastAttemptComplete: false },
  },
  'pulse.published': {
    type: 'pulse.published',
    id: 'pulse-1',
    at,
    data: {
      card: {
        id: 'card-1',
        status: 'quiet',
        asOf: at,
        beat: 'launches',
        headline: 'Quiet',
        lede: 'Nothing moved.',
        plain: null,
        bullets: [],
        receipts: [],
      },
    },
  },
};

/** A deep copy, so a test can break one field without touching the shared example. */
export function example<T extends SourceType>(type: T): Extract<SourceMessage, { type: T }> {
  return structuredClone(examples[type]);
}

export function line(message: unknown): string {
  return JSON.stringify(message);
}

/** A JSON value nested `depth` levels deep: deeper than JSON.stringify's recursion reaches. */
export function deeplyNested(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

/**
 * Rejected messages that hide a thesis from a careless dead-letter rule, each holding `SECRET`: deep
 * nesting, a key spelt with an escape, and texts that do not parse (with the word, and escaped).
 */
export const THESIS_HIDING_MESSAGES: readonly string[] = [
  `{"type":"call.recorded","id":"deep","data":{"thesisText":"SECRET","x":${deeplyNested(100_000)}}}`,
  `{"type":"call.recorded","id":"deep-escaped","data":{"\\u0074hesisText":"SECRET","x":${deeplyNested(100_000)}}}`,
  '{"type":"call.recorded","id":"escaped","data":{"\\u0074hesisText":"SECRET"}}',
  '{"type":"call.recorded","id":"cut","data":{"\\u0074hesisText":"SECRET"',
  '{"type":"call.recorded","id":"cut","data":{"thesisText":"SECRET"',
];
