/** What the fields of the call records, pulse cards, thesis feed, asks and error bodies mean (see api-docs.ts). */
import { describeFields } from './api-docs.ts';
import {
  askListSchema,
  askSchema,
  beatSchema,
  callDetailSchema,
  callerSchema,
  callFreshnessSchema,
  callPageSchema,
  callProjectSchema,
  callRecordSchema,
  callTokenSchema,
  errorSchema,
  pnlSchema,
  pulseCardSchema,
  pulseListSchema,
  pulseOneSchema,
  thesisErrorSchema,
  thesisItemSchema,
  thesisSnapshotSchema,
  thesisStatusSchema,
} from './schemas.ts';

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
