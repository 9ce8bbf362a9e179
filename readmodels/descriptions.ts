import { z } from 'zod';
import {
  askListSchema,
  askSchema,
  beatSchema,
  boardPageSchema,
  callDetailSchema,
  callerSchema,
  callFreshnessSchema,
  callPageSchema,
  callProjectSchema,
  callRecordSchema,
  callTokenSchema,
  calltrackerSummarySchema,
  dossierSchema,
  errorSchema,
  followerStatsSchema,
  identitySchema,
  onchainSchema,
  pnlSchema,
  projectContextSchema,
  projectFieldChangeSchema,
  projectHistorySchema,
  projectReadSchema,
  projectSchema,
  projectSearchSchema,
  projectWriteSchema,
  pulseCardSchema,
  pulseListSchema,
  pulseOneSchema,
  syncPageSchema,
  thesisErrorSchema,
  thesisItemSchema,
  thesisSnapshotSchema,
  thesisStatusSchema,
} from './schemas.ts';

/**
 * What every response field means, attached to the zod schemas in a registry of their own.
 * Only the OpenAPI generation reads it (api/openapi.ts): the MCP tool listings are rendered from
 * the same schemas without it, so they stay small (tools/list has a size budget), and the
 * response bytes are untouched. `describeFields` is typed by the object's shape, so a field added
 * to a schema without a description here does not type-check.
 */
export type SchemaDocs = { description?: string; fields?: Record<string, string> };
export const apiDocs = z.registry<SchemaDocs>();

type AnyObject = z.ZodObject<z.ZodRawShape>;

function describeFields<S extends AnyObject>(
  schema: S,
  fields: { [K in keyof S['shape']]: string },
  description?: string,
): void {
  apiDocs.add(schema, { fields, ...(description === undefined ? {} : { description }) });
}

/** Unions of objects sharing field names (the history changes): the same meaning in every variant. */
function describeVariantFields(schema: z.ZodType, fields: Record<string, string>): void {
  apiDocs.add(schema, { fields });
}

const nullableObject = <S extends AnyObject>(schema: z.ZodNullable<S>): S => schema.unwrap();

describeFields(
  identitySchema,
  {
    kind: 'Which public identity was submitted: an X (social) account, a website or a token contract.',
    handle: 'The social handle, without @, when the identity is an account; else null.',
    website: 'The website, when the identity is a website; else null.',
    chain: 'The chain of the contract, when the identity is a contract; else null.',
    contract: 'The token contract address, when the identity is a contract; else null.',
  },
  'The public identity submitted for the project, available before any research. Holds no chat-platform or private ingestion metadata.',
);

describeFields(
  followerStatsSchema,
  {
    source: 'The follower data provider that made the observation (the one configured provider).',
    handle: 'The handle the provider observed.',
    value: 'Followers counted.',
    checkedAt: 'When the provider counted them.',
  },
  'A verified, dated follower observation from the follower data provider.',
);

describeFields(
  onchainSchema,
  {
    symbol: 'Token symbol.',
    mcap: 'Market capitalisation in USD.',
    holders: 'Number of holder wallets.',
    liquidity: 'Pool liquidity in USD.',
    change24h: 'Price change over 24 hours, as a ratio (-0.12 is 12 % down).',
    buys24h: 'Buy transactions in the last 24 hours.',
    sells24h: 'Sell transactions in the last 24 hours.',
    top10Rate: 'Share of the supply held by the ten largest wallets, 0–1.',
    mintRenounced: 'Whether the mint authority was renounced (no new tokens can be minted).',
    lpLocked: 'Whether the liquidity-pool tokens are locked.',
    honeypot: 'Whether the token looks like a honeypot (buyable but not sellable).',
  },
  'An on-chain snapshot of the project token; unknown values are null. Not live: taken when checked.',
);

describeFields(
  dossierSchema,
  {
    name: 'Project name as researched.',
    category: 'Free-text kind of project, e.g. dex, lending, infrastructure, meme.',
    description: 'What the project does, in a few sentences.',
    stage: 'How far along it is, e.g. idea, testnet, live.',
    confidence: 'How firm the research is: low, medium or high.',
    chains: 'Chains the project runs on.',
    founders: 'Known founders and team members.',
    backers: 'Investors and backers named.',
    notable: 'Facts that fit nowhere else.',
    token: 'The project token, or null when it has none (yet).',
    links: 'Official links.',
    unverified: 'Claims the project makes that research could not confirm.',
    onchain:
      'On-chain snapshot taken when the dossier was written (not live; re-read the project to refresh), or null.',
  },
  'The research dossier written about a project.',
);
describeFields(dossierSchema.shape.founders.element, {
  name: 'Name, when known.',
  handle: 'Social handle, when known.',
  note: 'Role or remark, when known.',
});
describeFields(nullableObject(dossierSchema.shape.token), {
  ticker: 'Token ticker.',
  contract: 'Token contract address.',
  chain: 'Chain of the contract.',
});
describeFields(dossierSchema.shape.links, {
  site: 'Official website.',
  docs: 'Documentation.',
  github: 'Source code repository.',
});

describeFields(
  calltrackerSummarySchema,
  {
    status:
      'Outcome of the call-tracker look-up: matched (calls found), checked_no_match (verified: no calls), identity_unknown or identity_mismatch (the token could not be resolved).',
    historyComplete:
      'Whether the complete, orderable call history was verified; the first-call fields are published only then.',
    posts:
      'Verified calls of this chain-qualified token: 0 is a verified no-call result, null means the identity is unresolved.',
    firstAt: 'When the token was first called (only with a complete history).',
    firstMcap: 'Market cap in USD at the first call, not the cheapest or latest (only with a complete history).',
    firstCaller: 'Call-tracker handle of the first caller (only with a complete history).',
    latestAt: 'When the token was most recently called.',
    mcap: 'Current market cap in USD according to the call tracker.',
    multiple: 'mcap divided by firstMcap: below 1 when the call went down (only with a complete history).',
    checkedAt: 'When the call tracker was last asked.',
  },
  'What the call tracker knows about the project token. Null on a project means not looked up yet, which differs from posts = 0.',
);

describeFields(
  projectSchema,
  {
    id: 'Stable project id. Match on this, never on handle.',
    handle:
      'Social handle without the leading @; null for projects without one. A handle can be abandoned and reused by another account.',
    identity: 'The public identity submitted for the project, or null.',
    name: 'Display name.',
    pfp: 'Profile image URL.',
    fol: 'Follower count at the latest sighting.',
    followerStats: 'The latest verified follower observation, or null when none is stored.',
    why: 'One line on why the project reached the board.',
    bio: 'Profile bio.',
    firstSeenByUs: 'When the project first reached the board (not when the project started).',
    entry: 'The first sighting.',
    vel: 'Follower velocity: growth of the follower count over the last 24 hours and 7 days.',
    rival: 'How the board compares with the rival signal feed.',
    dossier: 'The research dossier, or null when none has been written.',
    calltracker: 'The call-tracker summary, or null when the token was not looked up yet.',
  },
  'A tracked project. Every field is always present; unknown values are null.',
);
describeFields(projectSchema.shape.entry, {
  at: 'When the project was first sighted.',
  fol: 'Its follower count then.',
});
describeFields(projectSchema.shape.vel, {
  h24: 'Followers gained in the last 24 hours (negative when lost); null without a sample that old.',
  d7: 'Followers gained in the last 7 days; null without a sample that old.',
});
describeFields(projectSchema.shape.rival, {
  lead: 'ISO 8601 duration by which the board saw the project before the rival feed listed it (e.g. P2DT3H); null when the rival was first or never listed it.',
});

describeFields(
  projectContextSchema,
  {
    votes: 'Standing community votes.',
    voters:
      'The most recent voters per side; shown only to an allowlisted key owner. Null means withheld, not no voters.',
    research: 'Research progress.',
    freshness: 'When each source was last read.',
  },
  'Votes, research progress and source dates of a project (include=context).',
);
describeFields(projectContextSchema.shape.votes, { up: 'Standing up votes.', down: 'Standing down votes.' });
const votersSchema = nullableObject(projectContextSchema.shape.voters);
describeFields(votersSchema, {
  up: 'The most recent up voters, newest first.',
  down: 'The most recent down voters, newest first.',
  limitPerSide: 'How many voters each side lists at most (always 20).',
});
describeFields(votersSchema.shape.up.element, { name: 'Display name, when known.', avatar: 'Avatar URL, when known.' });
describeFields(projectContextSchema.shape.research, {
  state: 'Where research stands; not_requested when there is no record. Queued research does not reserve funding.',
  hasDossier: 'Whether a dossier has been written.',
  nextEligibleAt: 'When research may next be requested, if limited.',
});
describeFields(projectContextSchema.shape.freshness, {
  readAt: 'When this public snapshot was read (kept on cache hits for up to 30 seconds); not when the sources updated.',
  dossierAt: 'When the dossier was written.',
  ggCheckedAt: 'When the call tracker was last asked.',
  onchainCheckedAt: 'The last successful scheduled on-chain check.',
});

describeFields(
  projectReadSchema,
  {
    project: 'The project.',
    context: 'Votes, research progress and freshness; present only with include=context.',
  },
  'One project, with its context when asked.',
);

describeFields(
  boardPageSchema,
  {
    projects: 'Up to 50 projects, newest firstSeenByUs first (ties by id).',
    page: 'This page number, 1-based.',
    pageSize: 'Projects per page (always 50).',
    total: 'Projects on the board (with the has_dossier filter, matching it).',
    totalPages: 'Pages in all; a page past the end is empty with these totals.',
    readAt: 'When the read model was read.',
  },
  'A board page (page mode).',
);
describeFields(
  syncPageSchema,
  {
    projects: 'Projects the archive wrote since the starting point, oldest write first, each at its latest state.',
    cursor:
      'Opaque bookmark after the last row served; always present, also on an empty page. Send it back to continue now or later.',
    hasMore: 'Whether more rows are ready now; when false, the cursor resumes with what is written later.',
    limit: 'The page size used (1–100).',
    readAt: 'When the read model was read.',
  },
  'A delta page (since / cursor mode).',
);

describeFields(
  projectSearchSchema,
  {
    state:
      'found (one match), missing (none), ambiguous (several: narrow by a chain-qualified contract or the project id) or chain_required (a bare contract on several chains).',
    project: 'The project when found; else null.',
    context: 'Its context when found; else null.',
    readAt: 'When the read model was read.',
  },
  'The outcome of a search. A miss adds no project and starts no research.',
);

describeFields(
  pulseCardSchema,
  {
    id: 'Card id.',
    status: 'live, or quiet when nothing moved (quiet is not broken).',
    asOf: 'When the desk wrote the card.',
    beat: 'The beat (news topic) the card belongs to.',
    headline: 'Headline.',
    lede: 'Opening sentence.',
    plain: 'The same story without jargon.',
    bullets: 'Key points.',
    receipts: 'Links to the social posts behind the card.',
  },
  'A short news card.',
);
describeFields(pulseCardSchema.shape.receipts.element, { label: 'What the link shows.', href: 'The link.' });
describeFields(
  beatSchema,
  {
    id: 'Beat id (launches, funding, listings, security, onchain, social, infra, policy).',
    label: 'Display name.',
    blurb: 'What the beat covers.',
    card: 'The current card, or null before the first one.',
  },
  'A news topic and its current card.',
);
describeFields(
  pulseListSchema,
  { beats: 'All eight beats, in a fixed order.', readAt: 'When the read model was read.' },
  'The current pulse.',
);
describeFields(
  pulseOneSchema,
  { beat: 'The beat asked for.', readAt: 'When the read model was read.' },
  'One beat of the pulse.',
);

describeFields(
  pnlSchema,
  {
    realizedUsd: "The caller's realized trading result in USD over the period (negative and zero are valid).",
    realizedPercent: 'The same result as a percentage.',
    period: 'The period (always 7d).',
    checkedAt: 'When it was observed.',
    closedTrades: 'Trades closed in the period.',
    skippedUnknownCostBasis: 'Trades left out because their cost basis is unknown.',
  },
  "The caller's tracked seven-day realized trading result: not the return on this call, not complete wallet history. Null when unknown, future-dated or at least 24 hours old.",
);
describeFields(
  callerSchema,
  {
    id: 'Caller id.',
    pseudo: 'Call-tracker handle.',
    name: 'Display name.',
    profileUrl: 'Profile page at the call tracker.',
    avatarUrl: 'Avatar URL.',
    subscribersCount: 'Subscribers at the call tracker.',
    xHandle: 'Social (X) handle.',
    bio: 'Profile bio.',
    pnl: 'Seven-day realized result, or null.',
  },
  'The author of a call.',
);
describeFields(
  callProjectSchema,
  {
    id: 'Project id on the board.',
    href: 'Relative canonical dossier URL (also for projects not researched yet).',
    name: 'Project name.',
    avatar: 'Project image URL.',
    bio: 'Project bio.',
    xHandle: 'Social (X) handle.',
    website: 'Website.',
    hasDossier: 'Whether a dossier has been written.',
  },
  'The board project a called token belongs to.',
);
describeFields(
  callTokenSchema,
  {
    key: 'chain:contract key of the token.',
    chain: 'Chain.',
    contract: 'Contract address.',
    name: 'Token name.',
    symbol: 'Token symbol.',
    logoUrl: 'Logo URL.',
    ggXHandle: 'Social handle the call tracker links to the token.',
    ggWebsite: 'Website the call tracker links to the token.',
    description: "The call tracker's description of the token.",
    project:
      'The board project, set only for an unambiguous current contract match; null means no safe link (the call stays).',
  },
  'A token named in a call.',
);
describeFields(
  callRecordSchema,
  {
    id: 'Call id.',
    createdAt: 'When the call was made.',
    updatedAt: 'When the call was last edited at the source.',
    sourceUrl: 'The call at the call tracker.',
    thesisText:
      "The author's thesis as plain text: an opinion, not a verified fact or a recommendation. A long post may be shortened with an explicit note; the original is at sourceUrl.",
    caller: 'Who made the call.',
    tokens: 'The tokens called (1–20).',
  },
  'A stored call record.',
);
describeFields(
  callFreshnessSchema,
  {
    checkedAt: 'The latest recorded collector attempt (not the newest call date).',
    completeAt: 'The last completed collection checkpoint (no promise that every historical call was collected).',
    lastAttemptComplete: 'Whether the latest attempt completed; null when unknown.',
  },
  'How current the stored call records are.',
);
describeFields(
  callPageSchema,
  {
    calls: 'Calls, newest first; as many whole calls as fit the 512 KiB budget, at most limit.',
    next: 'Opaque continuation: send it back with the same contract and chain; null at the end.',
    limit: 'The most calls this page could hold (1–30).',
    readAt: 'When the read model was read.',
    freshness: 'How current the collection is.',
  },
  'A page of call records.',
);
describeFields(
  callDetailSchema,
  { call: 'The call.', readAt: 'When the read model was read.', freshness: 'How current the collection is.' },
  'One call record.',
);

describeFields(
  thesisItemSchema,
  {
    id: 'Thesis id at the source.',
    text: 'The thesis text (private).',
    createdAt: 'When it was posted.',
    author: 'Who posted it.',
    trade: "The author's position, as reported by the provider at fetchedAt (not the thesis's return).",
  },
  'One thesis.',
);
describeFields(thesisItemSchema.shape.author, {
  name: 'Display name.',
  handle: 'Thesis-feed handle (not necessarily a social-network handle).',
  avatar: 'Avatar URL.',
  verified: 'Whether the feed marks the author verified.',
});
describeFields(thesisItemSchema.shape.trade, {
  usdValue: 'Position value in USD.',
  realizedPnlUsd: 'Realized profit or loss in USD.',
  unrealizedPnlUsd: 'Unrealized profit or loss in USD.',
});
describeFields(
  thesisSnapshotSchema,
  {
    contract: 'The contract on the supported chain.',
    networkId: 'The supported chain (always 4663).',
    fetchedAt: 'When the snapshot was read from the source.',
    threshold: 'The minimum position size for a thesis to be listed (always 1000).',
    limit: 'The most theses a snapshot holds (always 25).',
    hasMore: 'Whether the source has more; follow sourceUrl (no pagination or backfill here).',
    sourceUrl: 'The contract at the thesis source.',
    items: 'Up to 25 recent theses: not a full history.',
  },
  'A saved snapshot of recent theses about a contract.',
);
describeFields(
  thesisStatusSchema,
  {
    status: 'not_requested, queued, running, ready (fresh for 30 minutes), stale, or failed (no automatic retry).',
    snapshot: 'The saved snapshot (at most 24 hours old), or null.',
    lastOutcome: 'What the last read ended with, when it failed or was refused.',
    nextEligibleAt: 'When a new request may start, if limited.',
    workerAvailable: 'Whether the thesis reader is running (a queued request waits for it).',
    checkedAt: 'When this status was read.',
  },
  'The thesis feed for one contract: the saved snapshot and where a request stands.',
);

describeFields(askSchema, {
  id: 'Ask id.',
  question: 'The question asked, or null for a research request (or an answer that arrived first).',
  askedAt: 'When it was asked.',
  status: 'queued, researching, answered or failed.',
  answer: 'The answer, once answered.',
  answeredAt: 'When it was answered.',
});
describeFields(
  askListSchema,
  {
    projectId: 'The project.',
    asks: 'Questions and research requests about it, newest first.',
    readAt: 'When the read model was read.',
  },
  'What was asked of the research assistant about a project, and what it answered.',
);

describeFields(errorSchema, { error: 'What went wrong.' }, 'An error.');
describeFields(errorSchema.shape.error, {
  code: 'unauthorized, forbidden, rate_limited, bad_request, not_found, conflict or unavailable.',
  message: 'What to change or when to retry, in words; never echoes the input.',
});
describeFields(thesisErrorSchema, { error: 'What went wrong.' }, 'An error of the thesis-feed operations.');
describeFields(thesisErrorSchema.shape.error, {
  code: 'One of the general codes, or a code specific to the thesis feed.',
  message: 'What to change or when to retry, in words.',
});

describeFields(
  projectHistorySchema,
  {
    projectId: 'The project.',
    writes: 'Its writes, newest first.',
    next: 'Opaque continuation for older writes; null at the end.',
    readAt: 'When the history was read.',
  },
  "A page of a project's write history.",
);
describeFields(projectWriteSchema, {
  writtenAt: 'When the archive recorded the event that made the write.',
  seq: 'Its log position: what the delta mode orders this write by.',
  type: 'The event type (e.g. project.sighted).',
  changes: 'Each top-level field the write changed.',
});
describeVariantFields(projectFieldChangeSchema, {
  field: 'The top-level Project field.',
  before: 'Its value before the write; null on the first write.',
  after: 'Its value after the write.',
});
