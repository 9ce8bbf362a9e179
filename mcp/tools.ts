import { z } from 'zod';
import {
  askListSchema,
  askReceiptSchema,
  callDetailSchema,
  callPageSchema,
  projectSearchSchema,
  pulseListSchema,
  pulseOneSchema,
  boardPageInViewSchema,
  projectReadSchema,
  syncPageInViewSchema,
  type Project,
  thesisErrorSchema,
  thesisStatusSchema,
} from '../readmodels/schemas.ts';
import type { Caller } from '../service/caller.ts';
import type { Protection } from '../service/guard.ts';
import { askListParamsSchema, askListQuerySchema, askResearcherSchema } from '../service/requests/asks.ts';
import { thesisContractInputSchema } from '../service/requests/thesis.ts';
import { callParamsSchema, callsQuerySchema } from '../service/requests/calls.ts';
import { pulseParamsSchema } from '../service/requests/pulse.ts';
import { projectParamsSchema, projectViewSchema, syncQuerySchema } from '../service/requests/projects.ts';
import {
  boardQuerySchema,
  diffQuerySchema,
  listProjectsAsOfToolSchema,
  projectAsOfQuerySchema,
  searchAsOfQuerySchema,
} from '../service/requests/history-board.ts';
import { asOfPointSchema, projectDiffSchema, syncPageChangesSchema } from '../readmodels/history-schemas.ts';
import { errors, fail, type Result } from '../service/errors.ts';
import { asValue } from '../service/json-body.ts';
import { summarize } from '../service/summary.ts';
import type { Services } from '../service/services.ts';

/** Where a REST parameter travels (path, query string, JSON body), and arguments by part. */
type RestPart = 'params' | 'query' | 'body';
export type RestArguments = Record<RestPart, Record<string, unknown>>;

/** A tool's input: its REST twin's parameters, camelCase, in one strict object; `toRest` puts arguments back under their REST names and parts. */
export type ToolInput = { schema: z.ZodObject; toRest(args: Record<string, unknown>): RestArguments };

export const camelCase = (name: string): string => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** The input of a tool from its REST twin's request schemas (service/requests/*.ts), by part. */
export function toolInputFrom(request: Partial<Record<RestPart, z.ZodObject>>): ToolInput {
  const shape: Record<string, z.ZodType> = {};
  const origin = new Map<string, { part: RestPart; name: string }>();
  for (const part of ['params', 'query', 'body'] as const) {
    const schema = request[part];
    if (!schema) continue;
    for (const [name, field] of Object.entries(schema.shape)) {
      const camel = camelCase(name);
      if (origin.has(camel))
        throw new Error(`tool input: parameter '${camel}' appears twice (${origin.get(camel)!.part} and ${part})`);
      origin.set(camel, { part, name });
      shape[camel] = field as z.ZodType;
    }
  }
  return {
    schema: z.object(shape).strict(),
    toRest(args) {
      const rest: RestArguments = { params: {}, query: {}, body: {} };
      // for-in over own names: Object.entries would make an array per name on every call.
      for (const camel in args) {
        if (!Object.hasOwn(args, camel)) continue;
        const o = origin.get(camel);
        const value = args[camel];
        if (o && value !== undefined) rest[o.part][o.name] = value;
      }
      return rest;
    },
  };
}

/** One MCP tool: its REST twin's parameters and response schema, and a call into the twin's service function (`structuredContent` is the REST body). */
export type Tool = {
  name: string;
  title: string;
  description: string;
  input: ToolInput;
  /** The REST twin's 200 body; may be a union when the twin answers two shapes (e.g. pulse: all or one). */
  outputSchema: z.ZodType;
  /** The error envelope of the REST twin when it is not the standard one (thesis feed: any code). */
  errorSchema?: z.ZodObject;
  /** Where the full result schema would repeat another's at length: objects deeper than `depth` listed by type only, `note` saying where they are detailed. */
  outputDetail?: { depth: number; note: string };
  /** Set on the two tools that append (a request, a thesis job); every other tool only reads. */
  writes?: true;
  /** Defaults this surface applies where the REST twin's differ (listed as the parameter's default). */
  inputDefaults?: Record<string, unknown>;
  /** Rate-protection class of a call (with these arguments), as for the REST twin; 'protected' when not given. */
  protection?: Protection | ((services: Services, args: RestArguments) => Protection);
  call(services: Services, caller: Caller, args: RestArguments): Promise<Result<Record<string, unknown>>>;
};

/** Tools that return projects list their own fields; each project's are detailed by get_project (tools/list stays within 26 KB). */
const PROJECT_DETAIL = { depth: 1, note: 'Projects: see get_project.' };
/** The call page lists each call's own fields; nested objects are detailed by get_calltracker_call. */
const CALL_DETAIL = { depth: 2, note: 'Nested objects: see get_calltracker_call.' };
/** The single reads list two levels: tools/list stays within 26 KB; the REST twin's OpenAPI schema has every level. */
const TWIN_DETAIL = { depth: 2, note: "Nested objects: the REST twin's 200 response in /v1/openapi.json." };

/** The call page's default budget here: the page travels twice (structured, escaped as text), so its text stays under 20,000 characters. */
const MCP_CALL_PAGE_BYTES = 40_000;
/** sync_projects' default page on this surface (REST: 50); in the default summary view about 7 KB. */
const MCP_SYNC_LIMIT = 30;
/** diff_projects' default page on this surface (REST: 50): a row holds a project twice, before and after. */
const MCP_DIFF_LIMIT = 8;
/** Where a model is sent for the whole board: a walk of every page would not fit its context. */
const WHOLE_BOARD = 'For the whole board, run `pulseboard mirror` (a local copy kept in sync) instead of paging.';
/** A time before any write: sync_projects' start when it is given none. */
const ARCHIVE_START = '1970-01-01T00:00:00Z';

/** A listing in the view asked for (the service never sees `view`): summary unless `full` is asked, or the read names a point. */
async function inView<P extends { projects: Project[] }>(
  services: Services,
  query: Record<string, unknown>,
  read: (query: Record<string, unknown>) => Promise<Result<P>>,
): Promise<Result<Record<string, unknown>>> {
  const { view, ...rest } = query;
  const refusal = "view 'summary' is not offered with asOf (its writtenAt is today's); use the full view";
  if (rest.asOf !== undefined && view === 'summary') return fail(errors.badRequest(refusal));
  const page = await read(rest);
  const summary = view === 'summary' || (view === undefined && rest.asOf === undefined);
  return page.ok && summary ? { ok: true, value: await summarize(services.stores.store, page.value) } : page;
}

/** The point an as-of read answered for: in a result only when the call sent asOf, as in the REST twin's body. */
const answeredPoint = asOfPointSchema.optional();

/** The twelve tools (docs/api-guide.md lists them). */
export const tools: readonly Tool[] = [
  {
    name: 'list_projects',
    title: 'Project board',
    description: `The board of tracked projects, newest first (by first sighting, ties by id), 50 per page, with totals, in the summary view (view "full": the REST body). asOf: the board as it stood then, full view, naming the point (send its asOf.cursor as asOf for more pages of it). Match projects on id, never on handle (handles get reused). Same rows as GET /v1/projects?page=N. ${WHOLE_BOARD}`,
    input: toolInputFrom({ query: listProjectsAsOfToolSchema.extend({ view: projectViewSchema }).strict() }),
    outputSchema: boardPageInViewSchema.extend({ asOf: answeredPoint }).strict(),
    outputDetail: PROJECT_DETAIL,
    protection: 'basic',
    inputDefaults: { view: 'summary' },
    call: async (services, _caller, args) =>
      inView(services, args.query, async (query) => asValue(await services.board.list(query))),
  },
  {
    name: 'sync_projects',
    title: 'Projects written since a point',
    description: `Delta sync: the project rows the archive wrote since a point, oldest write first. With no arguments, from the beginning of the archive. "Wrote" means stored (a follower refresh counts), not materially changed. Every reply has a cursor: call again with it (and the same hasDossier) while hasMore, and keep the last as a bookmark. Rows in the summary view (view "full": the REST body), 30 per page (limit: 1 to 100). A row appears once per page sequence, at its latest write; match on id. To wait for the next write, send waitSeconds with the cursor. Same rows as GET /v1/projects?since=… or ?cursor=…. ${WHOLE_BOARD}`,
    input: toolInputFrom({
      query: syncQuerySchema.extend({ include: boardQuerySchema.shape.include, view: projectViewSchema }).strict(),
    }),
    inputDefaults: { limit: MCP_SYNC_LIMIT, view: 'summary' },
    outputSchema: syncPageInViewSchema.extend({ changes: syncPageChangesSchema.shape.changes.optional() }).strict(),
    outputDetail: PROJECT_DETAIL,
    protection: 'basic',
    call: async (services, _caller, args) => {
      const query: Record<string, unknown> = { limit: MCP_SYNC_LIMIT, ...args.query };
      const { include, wait_seconds: waitSeconds, ...delta } = query;
      if (include === undefined) return inView(services, query, async (q) => asValue(await services.projects.sync(q)));
      if (waitSeconds) return fail(errors.badRequest("include 'changes' does not wait: send waitSeconds without it"));
      // The REST delta page with changes; no starting point is the beginning of the archive, as without include.
      const start = delta.since === undefined && delta.cursor === undefined ? { since: ARCHIVE_START } : {};
      return inView(services, { ...delta, ...start, include }, async (q) =>
        asValue(await services.historyBoard.list(q)),
      );
    },
  },
  {
    name: 'get_project',
    title: 'One project',
    description:
      "One project by stable id or social handle; an id wins over a handle, a reused handle resolves to its latest claimant. asOf: the project as it stood then (not_found before it was on the board), naming the point; the handle is resolved on today's board. Reads with context or asOf are rate-protected. Same body as GET /v1/projects/{handle}.",
    input: toolInputFrom({ params: projectParamsSchema, query: projectAsOfQuerySchema }),
    outputSchema: projectReadSchema.extend({ asOf: answeredPoint }).strict(),
    outputDetail: TWIN_DETAIL,
    protection: (services, args) => (services.projects.isEnriched(args.query) ? 'protected' : 'basic'),
    call: async (services, caller, args) => asValue(await services.board.project(caller, args.params, args.query)),
  },
  {
    name: 'diff_projects',
    title: 'What changed between two points',
    description: `Net changes between two points (from exclusive, to inclusive, default now), in delta order: one row per project whose document differs, change added or changed, fields (the top-level names that differ), before and after. Page with next (it pins both points); ${MCP_DIFF_LIMIT} rows per page here (limit: 1 to 100). Rate-protected. Same body as GET /v1/projects/diff. ${WHOLE_BOARD}`,
    input: toolInputFrom({ query: diffQuerySchema }),
    inputDefaults: { limit: MCP_DIFF_LIMIT },
    outputSchema: projectDiffSchema,
    outputDetail: PROJECT_DETAIL,
    call: async (services, _caller, args) =>
      asValue(await services.historyBoard.diff({ limit: MCP_DIFF_LIMIT, ...args.query })),
  },
  {
    name: 'get_thesis_feed',
    title: 'Thesis feed status',
    description:
      'Private: the saved thesis snapshot (at most 25 recent theses, threshold 1000) and request status for one contract on the supported chain; reads only what is saved. Linked allowlisted key owners only, re-checked on every call, when the feature is enabled. After request_thesis_feed, poll at most every 15 seconds for up to two minutes, then leave it to the user. Same body as GET /v1/thesisfeed/theses.',
    input: toolInputFrom({ query: thesisContractInputSchema }),
    outputSchema: thesisStatusSchema,
    errorSchema: thesisErrorSchema,
    call: (services, caller, args) => services.thesis.status(caller, args.query),
  },
  {
    name: 'request_thesis_feed',
    title: 'Request a thesis snapshot',
    description:
      'Private: request one shared thesis snapshot for a contract on the supported chain. A fresh shared result (30-minute cache) comes at once; otherwise one read is queued for every member (none while one is queued or running). Caps: 20 submissions per member and 60 starts in all per UTC day, 16 open jobs; no retries. Progress: get_thesis_feed. Linked allowlisted key owners only, when the feature is enabled. Same body as POST /v1/thesisfeed/theses.',
    input: toolInputFrom({ body: thesisContractInputSchema }),
    outputSchema: thesisStatusSchema,
    outputDetail: { depth: 1, note: 'Nested objects: see get_thesis_feed.' },
    errorSchema: thesisErrorSchema,
    writes: true,
    call: async (services, caller, args) => {
      const result = await services.thesis.request(caller, args.body);
      return result.ok ? { ok: true, value: result.value.status } : result;
    },
  },
  {
    name: 'ask_researcher',
    title: 'Ask the research assistant',
    description:
      "Ask the research assistant a question about a project, or leave question out to request research. Answers come later: follow the id with researcher_answers, the research status with get_project include='context'. Every call creates a request: do not repeat one that succeeded. Allowlisted key owners only, re-checked on every call.",
    input: toolInputFrom({ body: askResearcherSchema }),
    outputSchema: askReceiptSchema,
    writes: true,
    call: (services, caller, args) => services.asks.ask(caller, args.body),
  },
  {
    name: 'researcher_answers',
    title: 'Research progress and answers',
    description:
      'What was asked of the research assistant about one project (id or handle) and its answers, newest first, each with status, answer and answeredAt. question null with askedAt set: a research request; askedAt null: known only from its updates. Allowlisted key owners only, re-checked on every call. Same body as GET /v1/projects/{handle}/ask.',
    input: toolInputFrom({ params: askListParamsSchema, query: askListQuerySchema }),
    outputSchema: askListSchema,
    call: (services, caller, args) => services.asks.list(caller, args.params, args.query),
  },
  {
    name: 'search_projects',
    title: 'Find a stored project',
    description:
      "Find a stored project by id, contract (0x…, base58), chain:contract, website (URL or domain) or social profile (@name, x.com/name). state: found, missing, ambiguous (narrow with chain:contract or the id) or chain_required (add the chain). asOf: matched on today's identifiers, shown as it stood then (missing before it was on the board), naming the point. Never adds a project or starts research. Rate-protected. Same body as GET /v1/search?q=….",
    input: toolInputFrom({ query: searchAsOfQuerySchema }),
    outputSchema: projectSearchSchema.extend({ asOf: answeredPoint }).strict(),
    outputDetail: PROJECT_DETAIL,
    call: async (services, caller, args) => asValue(await services.board.search(caller, args.query)),
  },
  {
    name: 'get_pulse',
    title: 'Pulse cards',
    description:
      'The current pulse cards: all eight beats in a fixed order (card null where a beat has none), or one beat when beat is given (unknown beat: not_found). A quiet card: nothing moved on that beat. Same body as GET /v1/pulse or GET /v1/pulse/{beat}.',
    input: toolInputFrom({ params: pulseParamsSchema.partial() }),
    outputSchema: z.union([pulseListSchema, pulseOneSchema]),
    protection: 'basic',
    call: (services, _caller, args) =>
      args.params.beat === undefined ? services.pulse.all({}) : services.pulse.one(args.params, {}),
  },
  {
    name: 'list_calltracker_calls',
    title: 'Stored call records',
    description:
      "Stored token-call records with their theses (an author's opinion, not a verified fact or advice), newest first. Pages stop at limit or maxBytes (default 40000 here, at most 512 KiB; the structured and the text copy both count) and never cut a text. Follow next, with the same contract and chain, until it is null. Paging is browsing, not a sync: re-read a call by id. Rate-protected. Same rows as GET /v1/calltracker/calls.",
    input: toolInputFrom({ query: callsQuerySchema }),
    inputDefaults: { maxBytes: MCP_CALL_PAGE_BYTES },
    outputSchema: callPageSchema,
    outputDetail: CALL_DETAIL,
    // The page also travels as an escaped JSON string in the text block: the budget counts both.
    call: async (services, _caller, args) =>
      asValue(await services.calls.list({ maxBytes: MCP_CALL_PAGE_BYTES, ...args.query }, { surface: 'mcp' })),
  },
  {
    name: 'get_calltracker_call',
    title: 'One call record',
    description:
      "One stored call record by id (a uuid): the thesis text, the caller profile (pnl: the caller's seven-day realized trading result, null when unknown or 24 hours old) and the tokens, each linked to a project only when exactly one current project matches its chain and contract. Rate-protected. Same body as GET /v1/calltracker/calls/{id}.",
    input: toolInputFrom({ params: callParamsSchema }),
    outputSchema: callDetailSchema,
    outputDetail: TWIN_DETAIL,
    call: (services, _caller, args) => services.calls.get(args.params, {}),
  },
];
