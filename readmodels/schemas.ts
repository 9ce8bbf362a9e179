import { z } from 'zod';

/**
 * Response schemas: the single source of truth for every public shape.
 * Ingest messages, events, OpenAPI and MCP output schemas are derived from these.
 */

export const isoDateTime = z.iso.datetime({ offset: true });
const str = z.string();
const nullableStr = z.string().nullable();
const nullableNum = z.number().nullable();

export const identitySchema = z
  .object({
    kind: z.enum(['x', 'website', 'contract']),
    handle: nullableStr,
    website: nullableStr,
    chain: nullableStr,
    contract: nullableStr,
  })
  .strict();

export const followerStatsSchema = z
  .object({
    source: str,
    handle: str,
    value: z.number().int().min(0),
    checkedAt: isoDateTime,
  })
  .strict();

export const onchainSchema = z
  .object({
    symbol: nullableStr,
    mcap: nullableNum,
    holders: nullableNum,
    liquidity: nullableNum,
    change24h: nullableNum,
    buys24h: nullableNum,
    sells24h: nullableNum,
    top10Rate: nullableNum,
    mintRenounced: z.boolean().nullable(),
    lpLocked: z.boolean().nullable(),
    honeypot: z.boolean().nullable(),
  })
  .strict();

export const dossierSchema = z
  .object({
    name: str,
    category: str,
    description: str,
    stage: str,
    confidence: str,
    chains: z.array(str),
    founders: z.array(z.object({ name: nullableStr, handle: nullableStr, note: nullableStr }).strict()),
    backers: z.array(str),
    notable: z.array(str),
    token: z.object({ ticker: nullableStr, contract: nullableStr, chain: nullableStr }).strict().nullable(),
    links: z.object({ site: nullableStr, docs: nullableStr, github: nullableStr }).strict(),
    unverified: z.array(str),
    onchain: onchainSchema.nullable(),
  })
  .strict();

export const calltrackerStatusSchema = z.enum(['matched', 'checked_no_match', 'identity_unknown', 'identity_mismatch']);

export const calltrackerSummarySchema = z
  .object({
    status: calltrackerStatusSchema,
    historyComplete: z.boolean(),
    posts: z.number().int().min(0).nullable(),
    firstAt: isoDateTime.nullable(),
    firstMcap: nullableNum,
    firstCaller: nullableStr,
    latestAt: isoDateTime.nullable(),
    mcap: nullableNum,
    multiple: nullableNum,
    checkedAt: isoDateTime.nullable(),
  })
  .strict();

export const projectSchema = z
  .object({
    id: str,
    handle: nullableStr,
    identity: identitySchema.nullable(),
    name: nullableStr,
    pfp: nullableStr,
    fol: nullableNum,
    followerStats: followerStatsSchema.nullable(),
    why: nullableStr,
    bio: nullableStr,
    firstSeenByUs: isoDateTime,
    entry: z.object({ at: isoDateTime.nullable(), fol: nullableNum }).strict(),
    vel: z.object({ h24: nullableNum, d7: nullableNum }).strict(),
    rival: z.object({ lead: nullableStr }).strict(),
    dossier: dossierSchema.nullable(),
    calltracker: calltrackerSummarySchema.nullable(),
  })
  .strict();

export const researchStateSchema = z.enum([
  'ready',
  'queued',
  'researching',
  'budget_wait',
  'awaiting_admission',
  'paused',
  'needs_review',
  'failed',
  'not_requested',
  'registration_pending',
  'unavailable',
]);

export const VOTERS_PER_SIDE = 20;

const voterSchema = z.object({ name: nullableStr, avatar: nullableStr }).strict();

export const projectContextSchema = z
  .object({
    votes: z.object({ up: z.number().int().min(0), down: z.number().int().min(0) }).strict(),
    voters: z
      .object({
        up: z.array(voterSchema).max(VOTERS_PER_SIDE),
        down: z.array(voterSchema).max(VOTERS_PER_SIDE),
        limitPerSide: z.literal(VOTERS_PER_SIDE),
      })
      .strict()
      .nullable(),
    research: z
      .object({ state: researchStateSchema, hasDossier: z.boolean(), nextEligibleAt: isoDateTime.nullable() })
      .strict(),
    freshness: z
      .object({
        readAt: isoDateTime,
        dossierAt: isoDateTime.nullable(),
        ggCheckedAt: isoDateTime.nullable(),
        onchainCheckedAt: isoDateTime.nullable(),
      })
      .strict(),
  })
  .strict();

export const projectSearchStateSchema = z.enum(['found', 'missing', 'ambiguous', 'chain_required']);

// ---- Pulse (spec 2.7)

export const pulseCardSchema = z
  .object({
    id: str,
    status: z.enum(['live', 'quiet']),
    asOf: str,
    beat: str,
    headline: str,
    lede: str,
    plain: nullableStr,
    bullets: z.array(str),
    receipts: z.array(z.object({ label: str, href: str }).strict()),
  })
  .strict();

export const beatSchema = z.object({ id: str, label: str, blurb: str, card: pulseCardSchema.nullable() }).strict();

// ---- Call records (spec 2.8)

export const THESIS_TEXT_MAX = 12000;
export const TOKENS_PER_CALL_MAX = 20;

export const pnlSchema = z
  .object({
    realizedUsd: z.number(),
    realizedPercent: z.number(),
    period: z.literal('7d'),
    checkedAt: isoDateTime,
    closedTrades: z.number().int().min(0),
    skippedUnknownCostBasis: z.number().int().min(0),
  })
  .strict();

export const callerSchema = z
  .object({
    id: z.uuid(),
    pseudo: str,
    name: str,
    profileUrl: z.url(),
    avatarUrl: nullableStr,
    subscribersCount: z.number().int().min(0).nullable(),
    xHandle: nullableStr,
    bio: nullableStr,
    pnl: pnlSchema.nullable(),
  })
  .strict();

export const callProjectSchema = z
  .object({
    id: str,
    href: str,
    name: nullableStr,
    avatar: nullableStr,
    bio: nullableStr,
    xHandle: nullableStr,
    website: nullableStr,
    hasDossier: z.boolean(),
  })
  .strict();

export const callTokenSchema = z
  .object({
    key: str,
    chain: str,
    contract: str,
    name: str,
    symbol: nullableStr,
    logoUrl: nullableStr,
    ggXHandle: nullableStr,
    ggWebsite: nullableStr,
    description: nullableStr,
    project: callProjectSchema.nullable(),
  })
  .strict();

export const callRecordSchema = z
  .object({
    id: z.uuid(),
    createdAt: isoDateTime,
    updatedAt: isoDateTime,
    sourceUrl: z.url(),
    thesisText: z.string().max(THESIS_TEXT_MAX),
    caller: callerSchema,
    tokens: z.array(callTokenSchema).min(1).max(TOKENS_PER_CALL_MAX),
  })
  .strict();

export const callFreshnessSchema = z
  .object({
    checkedAt: isoDateTime.nullable(),
    completeAt: isoDateTime.nullable(),
    lastAttemptComplete: z.boolean().nullable(),
  })
  .strict();

export const CALL_PAGE_MAX = 30;
export const CALL_PAGE_DEFAULT = 20;
export const CURSOR_MAX = 512;

export const callPageSchema = z
  .object({
    calls: z.array(callRecordSchema).max(CALL_PAGE_MAX),
    next: z.string().max(CURSOR_MAX).nullable(),
    limit: z.number().int().min(1).max(CALL_PAGE_MAX),
    readAt: isoDateTime,
    freshness: callFreshnessSchema,
  })
  .strict();

export const callDetailSchema = z
  .object({ call: callRecordSchema, readAt: isoDateTime, freshness: callFreshnessSchema })
  .strict();

// ---- Thesis feed (spec 2.9)

export const THESIS_CONTRACT_PATTERN = /^0x[0-9a-fA-F]{40}$/;
export const THESIS_NETWORK_ID = 4663;
export const THESIS_THRESHOLD = 1000;
export const THESIS_ITEMS_MAX = 25;

export const thesisContractSchema = z.string().regex(THESIS_CONTRACT_PATTERN, 'must match ^0x[0-9a-fA-F]{40}$');

export const thesisItemSchema = z
  .object({
    id: str,
    text: z.string().max(THESIS_TEXT_MAX),
    createdAt: isoDateTime,
    author: z.object({ name: nullableStr, handle: nullableStr, avatar: nullableStr, verified: z.boolean() }).strict(),
    trade: z.object({ usdValue: nullableNum, realizedPnlUsd: nullableNum, unrealizedPnlUsd: nullableNum }).strict(),
  })
  .strict();

export const thesisSnapshotSchema = z
  .object({
    contract: thesisContractSchema,
    networkId: z.literal(THESIS_NETWORK_ID),
    fetchedAt: isoDateTime,
    threshold: z.literal(THESIS_THRESHOLD),
    limit: z.literal(THESIS_ITEMS_MAX),
    hasMore: z.boolean(),
    sourceUrl: z.url(),
    items: z.array(thesisItemSchema).max(THESIS_ITEMS_MAX),
  })
  .strict();

export const thesisStatusValueSchema = z.enum(['not_requested', 'queued', 'running', 'ready', 'stale', 'failed']);

export const thesisStatusSchema = z
  .object({
    status: thesisStatusValueSchema,
    snapshot: thesisSnapshotSchema.nullable(),
    lastOutcome: nullableStr,
    nextEligibleAt: isoDateTime.nullable(),
    workerAvailable: z.boolean(),
    checkedAt: isoDateTime,
  })
  .strict();

// ---- Asks

export const askStatusSchema = z.enum(['queued', 'researching', 'answered', 'failed']);

export const askSchema = z
  .object({
    id: str,
    question: nullableStr,
    askedAt: isoDateTime.nullable(),
    status: askStatusSchema,
    answer: nullableStr,
    answeredAt: isoDateTime.nullable(),
  })
  .strict();

/** What `ask_researcher` returns: the id to follow in the ask list, and its state when appended. */
export const askReceiptSchema = z
  .object({ id: str, projectId: str, kind: z.enum(['question', 'research']), state: askStatusSchema })
  .strict();

// ---- Errors (spec 2.11)

export const errorCodeSchema = z.enum([
  'unauthorized',
  'forbidden',
  'rate_limited',
  'bad_request',
  'not_found',
  'conflict',
  'unavailable',
]);
export type ErrorCode = z.infer<typeof errorCodeSchema>;

export const errorSchema = z
  .object({ error: z.object({ code: errorCodeSchema, message: z.string() }).strict() })
  .strict();

/** On the thesis-feed operations the code is an unconstrained string (spec 2.11). */
export const thesisErrorSchema = z
  .object({ error: z.object({ code: z.string(), message: z.string() }).strict() })
  .strict();

// ---- Envelopes

export const BOARD_PAGE_SIZE = 50;
export const SYNC_LIMIT_DEFAULT = 50;
export const SYNC_LIMIT_MAX = 100;

export const boardPageSchema = z
  .object({
    projects: z.array(projectSchema).max(BOARD_PAGE_SIZE),
    page: z.number().int().min(1),
    pageSize: z.literal(BOARD_PAGE_SIZE),
    total: z.number().int().min(0),
    totalPages: z.number().int().min(0),
    readAt: isoDateTime,
  })
  .strict();

export const syncPageSchema = z
  .object({
    projects: z.array(projectSchema).max(SYNC_LIMIT_MAX),
    cursor: z.string(),
    hasMore: z.boolean(),
    limit: z.number().int().min(1).max(SYNC_LIMIT_MAX),
    readAt: isoDateTime,
  })
  .strict();

/**
 * A project row in the compact view of a listing (the tools' `view: "summary"`): enough to tell
 * projects apart and notice a change, about a tenth of the full row. `writtenAt` is when the archive
 * last wrote the row.
 */
export const projectSummarySchema = z
  .object({
    id: str,
    handle: nullableStr,
    name: nullableStr,
    fol: nullableNum,
    firstSeenByUs: isoDateTime,
    hasDossier: z.boolean(),
    writtenAt: isoDateTime,
  })
  .strict();

/** A board or delta page in either view (the listing tools'): every row full, or every row a summary. */
const projectRowsSchema = (max: number) =>
  z.union([z.array(projectSchema).max(max), z.array(projectSummarySchema).max(max)]);
export const boardPageInViewSchema = boardPageSchema.extend({ projects: projectRowsSchema(BOARD_PAGE_SIZE) }).strict();
export const syncPageInViewSchema = syncPageSchema.extend({ projects: projectRowsSchema(SYNC_LIMIT_MAX) }).strict();

export const projectReadSchema = z
  .object({ project: projectSchema, context: projectContextSchema.optional() })
  .strict();

export const projectSearchSchema = z
  .object({
    state: projectSearchStateSchema,
    project: projectSchema.nullable(),
    context: projectContextSchema.nullable(),
    readAt: isoDateTime,
  })
  .strict();

/** The eight configured beats (config/beats.ts), always all of them. */
export const BEAT_COUNT = 8;
export const pulseListSchema = z
  .object({ beats: z.array(beatSchema).length(BEAT_COUNT), readAt: isoDateTime })
  .strict();
export const pulseOneSchema = z.object({ beat: beatSchema, readAt: isoDateTime }).strict();

export const askListSchema = z.object({ projectId: str, asks: z.array(askSchema), readAt: isoDateTime }).strict();

export type Project = z.infer<typeof projectSchema>;
export type ProjectContext = z.infer<typeof projectContextSchema>;
export type Dossier = z.infer<typeof dossierSchema>;
export type Onchain = z.infer<typeof onchainSchema>;
export type CalltrackerSummary = z.infer<typeof calltrackerSummarySchema>;
export type Identity = z.infer<typeof identitySchema>;
export type FollowerStats = z.infer<typeof followerStatsSchema>;
export type PulseCard = z.infer<typeof pulseCardSchema>;
export type Beat = z.infer<typeof beatSchema>;
export type CallRecord = z.infer<typeof callRecordSchema>;
export type CallToken = z.infer<typeof callTokenSchema>;
export type CallProject = z.infer<typeof callProjectSchema>;
export type CallFreshness = z.infer<typeof callFreshnessSchema>;
export type CallPage = z.infer<typeof callPageSchema>;
export type CallDetail = z.infer<typeof callDetailSchema>;
export type ThesisStatus = z.infer<typeof thesisStatusSchema>;
export type ThesisSnapshot = z.infer<typeof thesisSnapshotSchema>;
export type ThesisItem = z.infer<typeof thesisItemSchema>;
export type Ask = z.infer<typeof askSchema>;
export type AskList = z.infer<typeof askListSchema>;
export type AskReceipt = z.infer<typeof askReceiptSchema>;
export type BoardPage = z.infer<typeof boardPageSchema>;
export type SyncPage = z.infer<typeof syncPageSchema>;
export type ResearchState = z.infer<typeof researchStateSchema>;

// ---- Project history (GET /v1/projects/{handle}/history)

export const HISTORY_LIMIT_DEFAULT = 20;
export const HISTORY_LIMIT_MAX = 100;

type ProjectField = keyof Project;

/** One changed top-level field of a Project; `before` is null on the project's first write. */
export type ProjectFieldChange = {
  [F in ProjectField]: { field: F; before: Project[F] | null; after: Project[F] };
}[ProjectField];

const projectFieldChangeSchemas = (Object.keys(projectSchema.shape) as ProjectField[]).map((field) => {
  const value = projectSchema.shape[field];
  return z
    .object({ field: z.literal(field), before: value.safeParse(null).success ? value : value.nullable(), after: value })
    .strict();
});

/** Derived from projectSchema field by field, so a field added to Project is covered here too. */
export const projectFieldChangeSchema = z.discriminatedUnion(
  'field',
  projectFieldChangeSchemas as unknown as [
    (typeof projectFieldChangeSchemas)[number],
    ...(typeof projectFieldChangeSchemas)[number][],
  ],
) as unknown as z.ZodType<ProjectFieldChange>;

export const projectWriteSchema = z
  .object({
    /** recordedAt of the event that made the write. */
    writtenAt: isoDateTime,
    /** Its log position: the `seq` the delta mode ordered this write by. */
    seq: z.number().int().min(1),
    type: z.string(),
    changes: z.array(projectFieldChangeSchema).min(1),
  })
  .strict();

export const projectHistorySchema = z
  .object({
    projectId: str,
    writes: z.array(projectWriteSchema).max(HISTORY_LIMIT_MAX),
    next: z.string().max(CURSOR_MAX).nullable(),
    readAt: isoDateTime,
  })
  .strict();

export type ProjectWrite = z.infer<typeof projectWriteSchema>;
export type ProjectHistory = z.infer<typeof projectHistorySchema>;
