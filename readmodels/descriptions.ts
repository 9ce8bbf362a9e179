/**
 * What the fields of the projects' responses (board, delta pages, a project, its context, search and
 * history) mean, in the registry of api-docs.ts; the other responses' in feed-descriptions.ts, loaded
 * with these, so importing `apiDocs` from here gives every description.
 */
import { describeFields, describeVariantFields, nullableObject } from './api-docs.ts';
import './feed-descriptions.ts';
import {
  boardPageSchema,
  calltrackerSummarySchema,
  dossierSchema,
  followerStatsSchema,
  identitySchema,
  onchainSchema,
  projectContextSchema,
  projectFieldChangeSchema,
  projectHistorySchema,
  projectReadSchema,
  projectSchema,
  projectSearchSchema,
  projectWriteSchema,
  syncPageSchema,
} from './schemas.ts';

export { apiDocs, type SchemaDocs } from './api-docs.ts';

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
