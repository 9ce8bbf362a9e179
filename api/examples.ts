import { BEATS } from '../config/beats.ts';
import type {
  AskList,
  Beat,
  BoardPage,
  CallDetail,
  CallFreshness,
  CallPage,
  CallRecord,
  Project,
  ProjectContext,
  ProjectHistory,
  PulseCard,
  SyncPage,
  ThesisStatus,
} from '../readmodels/schemas.ts';
import type { BoardPageAsOf, ProjectDiff, SyncPageChanges } from '../readmodels/history-schemas.ts';

/**
 * One realistic example response per operation and success status, shown on /docs and in the
 * OpenAPI document. Typed by the response types (so a shape change breaks the build), and
 * validated against each operation's own response schema by test/docs/openapi-descriptions.test.ts.
 */

const READ_AT = '2026-11-20T09:15:02.118Z';
const CONTRACT = '0x4f2a8c1e9b7d3a6f5e0c2b8d1a7f9e3c6b5d4a21';

const project: Project = {
  id: 'prj_7Qm2xKd91',
  handle: 'tidalswap',
  identity: { kind: 'x', handle: 'tidalswap', website: null, chain: null, contract: null },
  name: 'Tidal Swap',
  pfp: 'https://images.example.com/tidalswap.png',
  fol: 18420,
  followerStats: { source: 'followerscope', handle: 'tidalswap', value: 18377, checkedAt: '2026-11-20T06:00:00Z' },
  why: 'Followers tripled in a week after the testnet launch',
  bio: 'Intent-based swaps on Base. Testnet live.',
  firstSeenByUs: '2026-11-12T14:03:00Z',
  entry: { at: '2026-11-12T14:03:00Z', fol: 6120 },
  vel: { h24: 1310, d7: 11880 },
  rival: { lead: 'P1DT4H' },
  dossier: {
    name: 'Tidal Swap',
    category: 'dex',
    description: 'A swap aggregator that fills user intents through solvers on Base.',
    stage: 'testnet',
    confidence: 'medium',
    chains: ['base'],
    founders: [{ name: 'Mara Lindqvist', handle: 'maralq', note: 'previously at a market maker' }],
    backers: ['Northwind Ventures'],
    notable: ['Audit by an independent firm announced for December'],
    token: { ticker: 'TIDE', contract: CONTRACT, chain: 'base' },
    links: { site: 'https://tidalswap.example', docs: 'https://docs.tidalswap.example', github: null },
    unverified: ['Claims 40,000 testnet users'],
    onchain: {
      symbol: 'TIDE',
      mcap: 2450000,
      holders: 3810,
      liquidity: 410000,
      change24h: -0.07,
      buys24h: 912,
      sells24h: 1004,
      top10Rate: 0.31,
      mintRenounced: true,
      lpLocked: true,
      honeypot: false,
    },
  },
  calltracker: {
    status: 'matched',
    historyComplete: true,
    posts: 4,
    firstAt: '2026-11-13T10:21:00Z',
    firstMcap: 820000,
    firstCaller: 'degen_dora',
    latestAt: '2026-11-19T18:40:00Z',
    mcap: 2450000,
    multiple: 2.99,
    checkedAt: '2026-11-20T08:00:00Z',
  },
};

const context: ProjectContext = {
  votes: { up: 14, down: 3 },
  voters: null,
  research: { state: 'ready', hasDossier: true, nextEligibleAt: null },
  freshness: {
    readAt: READ_AT,
    dossierAt: '2026-11-14T09:00:00Z',
    ggCheckedAt: '2026-11-20T08:00:00Z',
    onchainCheckedAt: '2026-11-20T07:30:00Z',
  },
};

const freshness: CallFreshness = {
  checkedAt: '2026-11-20T09:00:00Z',
  completeAt: '2026-11-20T09:00:00Z',
  lastAttemptComplete: true,
};

const call: CallRecord = {
  id: '6d0f3c9a-2b1e-4f7a-9c8d-3e5b7a1f2c4d',
  createdAt: '2026-11-19T18:40:00Z',
  updatedAt: '2026-11-19T18:40:00Z',
  sourceUrl: 'https://calltracker.example/calls/6d0f3c9a',
  thesisText:
    'Solver network is live on testnet and volume is growing daily; entry below 3M mcap before the audit lands.',
  caller: {
    id: 'a3c1e7b2-5d4f-4e6a-8b9c-1f2e3d4c5b6a',
    pseudo: 'degen_dora',
    name: 'Dora',
    profileUrl: 'https://calltracker.example/u/degen_dora',
    avatarUrl: null,
    subscribersCount: 5210,
    xHandle: 'degendora',
    bio: 'Base ecosystem calls',
    pnl: {
      realizedUsd: 12840.5,
      realizedPercent: 18.2,
      period: '7d',
      checkedAt: '2026-11-20T06:00:00Z',
      closedTrades: 23,
      skippedUnknownCostBasis: 1,
    },
  },
  tokens: [
    {
      key: `base:${CONTRACT}`,
      chain: 'base',
      contract: CONTRACT,
      name: 'Tidal',
      symbol: 'TIDE',
      logoUrl: null,
      ggXHandle: 'tidalswap',
      ggWebsite: 'https://tidalswap.example',
      description: null,
      project: {
        id: project.id,
        href: `/projects/${project.id}`,
        name: project.name,
        avatar: project.pfp,
        bio: project.bio,
        xHandle: 'tidalswap',
        website: 'https://tidalswap.example',
        hasDossier: true,
      },
    },
  ],
};

const card: PulseCard = {
  id: 'card_launches_20261120',
  status: 'live',
  asOf: '2026-11-20T08:30:00Z',
  beat: 'launches',
  headline: 'Three Base launches cross 1M market cap',
  lede: 'Intent-based swaps led the day as two new tokens went live.',
  plain: 'Three new tokens on Base became worth more than a million dollars today.',
  bullets: ['Tidal Swap opened its testnet to the public', 'Two launches locked their liquidity'],
  receipts: [{ label: 'Launch post', href: 'https://x.example/tidalswap/status/1' }],
};

const beats: Beat[] = BEATS.map((beat) => ({
  id: beat.id,
  label: beat.label,
  blurb: beat.blurb,
  card: beat.id === 'launches' ? card : null,
}));

const thesisReady: ThesisStatus = {
  status: 'ready',
  snapshot: {
    contract: '0x9b1c4e7a2d5f8b3c6e9a1d4f7b2c5e8a3d6f9b1c',
    networkId: 4663,
    fetchedAt: '2026-11-20T09:02:11Z',
    threshold: 1000,
    limit: 25,
    hasMore: false,
    sourceUrl: 'https://theses.example/token/0x9b1c4e7a2d5f8b3c6e9a1d4f7b2c5e8a3d6f9b1c',
    items: [
      {
        id: 'th_88213',
        text: 'Team shipped the bridge on schedule; holding through the unlock.',
        createdAt: '2026-11-19T22:14:00Z',
        author: { name: 'Ola', handle: 'ola_trades', avatar: null, verified: true },
        trade: { usdValue: 4200, realizedPnlUsd: 0, unrealizedPnlUsd: 610 },
      },
    ],
  },
  lastOutcome: null,
  nextEligibleAt: null,
  workerAvailable: true,
  checkedAt: READ_AT,
};

const thesisQueued: ThesisStatus = {
  status: 'queued',
  snapshot: null,
  lastOutcome: null,
  nextEligibleAt: null,
  workerAvailable: true,
  checkedAt: READ_AT,
};

const board: BoardPage = { projects: [project], page: 1, pageSize: 50, total: 1, totalPages: 1, readAt: READ_AT };
const delta: SyncPage = {
  projects: [project],
  cursor: 'eyJzIjo5ODMxMiwiaSI6InByal83UW0yeEtkOTEifQ',
  hasMore: false,
  limit: 50,
  readAt: READ_AT,
};
const calls: CallPage = { calls: [call], next: null, limit: 20, readAt: READ_AT, freshness };
const detail: CallDetail = { call, readAt: READ_AT, freshness };
const asks: AskList = {
  projectId: project.id,
  asks: [
    {
      id: 'ask_51c2',
      question: 'Who audits the contracts, and when is the report due?',
      askedAt: '2026-11-18T12:00:00Z',
      status: 'answered',
      answer: 'An independent firm; the report is announced for mid-December.',
      answeredAt: '2026-11-18T16:45:00Z',
    },
  ],
  readAt: READ_AT,
};
const history: ProjectHistory = {
  projectId: project.id,
  writes: [
    {
      writtenAt: '2026-11-20T06:00:04.512Z',
      seq: 98312,
      type: 'project.sighted',
      changes: [{ field: 'fol', before: 17110, after: 18420 }],
    },
  ],
  next: null,
  readAt: READ_AT,
};

const asOf = {
  at: '2026-11-01T00:00:00.000Z',
  cursor: 'eyJ2IjoxLCJhIjoiYXJjaGl2ZSIsInMiOjQxMjAsImkiOiIiLCJmIjoiYWxsIn0',
};
const boardAsOf: BoardPageAsOf = { ...board, asOf };
const deltaChanges: SyncPageChanges = {
  ...delta,
  changes: [{ id: project.id, changedFields: ['fol', 'vel', 'followerStats'] }],
};
const diff: ProjectDiff = {
  from: asOf,
  to: { at: '2026-11-06T00:00:00.000Z', cursor: 'eyJ2IjoxLCJhIjoiYXJjaGl2ZSIsInMiOjk4MzEyLCJpIjoiIiwiZiI6ImFsbCJ9' },
  changes: [
    {
      id: project.id,
      change: 'changed',
      fields: ['fol', 'vel'],
      before: { ...project, fol: 17110, vel: { h24: 402, d7: 10600 } },
      after: project,
    },
  ],
  next: null,
  readAt: READ_AT,
};

export type OperationExample = { summary: string; value: unknown };

/** By operationId, then status code; several named examples where an operation has modes. */
export const OPERATION_EXAMPLES: Record<string, Record<number, Record<string, OperationExample>>> = {
  listProjects: {
    200: {
      board: { summary: 'Board mode (?page=1)', value: board },
      delta: { summary: 'Delta mode (?since=… or ?cursor=…)', value: delta },
      boardAsOf: { summary: 'The board as it stood at a point (?page=1&asOf=2026-11-01T00:00:00Z)', value: boardAsOf },
      deltaChanges: { summary: 'Delta mode with include=changes', value: deltaChanges },
    },
  },
  diffProjects: { 200: { week: { summary: "A week's net changes (?from=…&to=…)", value: diff } } },
  streamProjectChanges: {
    200: {
      oneWrite: {
        summary: 'One written project row, then a heartbeat comment',
        value: `id: ${delta.cursor}\ndata: ${JSON.stringify(project)}\n\n: heartbeat\n\n`,
      },
    },
  },
  getProject: {
    200: {
      withContext: { summary: 'With include=context', value: { project, context } },
      asOf: { summary: 'As it stood at a point (?asOf=…)', value: { project, asOf } },
    },
  },
  listProjectAsks: { 200: { answered: { summary: 'One answered question', value: asks } } },
  getProjectHistory: { 200: { followerRefresh: { summary: 'A follower-count refresh', value: history } } },
  searchProjects: {
    200: {
      found: {
        summary: 'A contract that matches one project',
        value: { state: 'found', project, context, readAt: READ_AT },
      },
    },
  },
  listCalltrackerCalls: { 200: { lastPage: { summary: 'One call, last page', value: calls } } },
  getCalltrackerCall: { 200: { call: { summary: 'A call with its linked project', value: detail } } },
  listPulse: {
    200: { today: { summary: 'One live card, the other beats still empty', value: { beats, readAt: READ_AT } } },
  },
  getPulseBeat: { 200: { launches: { summary: 'The launches beat', value: { beat: beats[0]!, readAt: READ_AT } } } },
  getThesisFeed: { 200: { ready: { summary: 'A saved snapshot', value: thesisReady } } },
  requestThesisFeed: {
    200: { fresh: { summary: 'A fresh shared snapshot (cache hit)', value: thesisReady } },
    202: { queued: { summary: 'A read was queued', value: thesisQueued } },
  },
};

/**
 * One example error body per status, each with the code that status carries (left to Swagger UI,
 * every status would show the first value of the shared enum); messages as the service words them.
 */
export const ERROR_EXAMPLES: Record<number, OperationExample> = {
  400: {
    summary: 'An invalid parameter, named',
    value: { error: { code: 'bad_request', message: "parameter 'limit' must be a whole number from 1 to 100" } },
  },
  401: {
    summary: 'Any key problem',
    value: { error: { code: 'unauthorized', message: 'Missing or invalid API key.' } },
  },
  403: {
    summary: 'Not allowlisted',
    value: {
      error: {
        code: 'forbidden',
        message: 'this operation is open to allowlisted key owners only; ask the operator to allowlist your key owner',
      },
    },
  },
  404: {
    summary: 'Nothing there',
    value: { error: { code: 'not_found', message: "no project with id or handle 'tidalswap'" } },
  },
  409: {
    summary: 'A cursor of another archive',
    value: {
      error: { code: 'conflict', message: "this cursor was issued by a different archive; start again with 'since'" },
    },
  },
  429: {
    summary: 'Budget spent: wait Retry-After seconds',
    value: { error: { code: 'rate_limited', message: 'Rate limit exceeded; retry after the Retry-After interval.' } },
  },
  500: {
    summary: 'Unexpected failure',
    value: { error: { code: 'unavailable', message: 'Unexpected failure; retry later.' } },
  },
  503: {
    summary: 'A store cannot be read: retry after Retry-After',
    value: { error: { code: 'unavailable', message: 'A store is temporarily unavailable; retry shortly.' } },
  },
};
