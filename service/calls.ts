import { z } from 'zod';
import { createVersionedMap, type BodyCache, type CacheVersion, type TimeSpan } from './body-cache.ts';
import { normalizeChain, normalizeContract } from '../config/chains.ts';
import {
  CALL_FACETS,
  CALL_KEYS,
  CALL_INDEX_COLLECTION,
  CALLS_COLLECTION,
  CALLS_COLLECTOR_COLLECTION,
  COLLECTOR_DOC_ID,
  EMPTY_FRESHNESS,
  callDocId,
  tokenChain,
  type StoredCall,
} from '../projectors/calls.ts';
import { PROJECTS_COLLECTION, isPublicProject } from '../projectors/projects.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import { withSortKey } from '../readmodels/stored-doc.ts';
import {
  CALL_PAGE_DEFAULT,
  CURSOR_MAX,
  type CallDetail,
  type CallFreshness,
  type CallPage,
  type CallProject,
  type CallRecord,
  type Project,
} from '../readmodels/schemas.ts';
import {
  callProjectOf,
  pnlAtReadTime,
  pnlSpan,
  readTimeFieldsOf,
  servedCallText,
  type ReadTimeFields,
} from './call-read-time.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { echoed, errors, fail, ok, type Result } from './errors.ts';
import { parseParams } from './requests/params.ts';
import { jsonBody, withReadAt, type JsonBody } from './json-body.ts';
import { CALL_PAGE_BUDGET_MAX, callParamsSchema, callQuerySchema, callsQuerySchema } from './requests/calls.ts';

/** The response budget of one call page when the request sets no `maxBytes`, in bytes of UTF-8. */
export const CALL_PAGE_BUDGET_BYTES = CALL_PAGE_BUDGET_MAX;
/** A contract filter may select at most this many calls; one more id is read to detect "more". */
export const CONTRACT_CANDIDATES_MAX = 5000;
/**
 * On the tool-protocol surface the page also travels inside the JSON-RPC result and its
 * transport framing; this much of the budget is kept for that envelope.
 */
export const MCP_ENVELOPE_RESERVE_BYTES = 2048;

/**
 * `rest`: the page is the response body. `mcp`: the page is sent twice, as structuredContent and as
 * a JSON string inside a text block, so its escaped size counts too.
 */
export type Surface = 'rest' | 'mcp';

export type CallsService = {
  /** GET /v1/calltracker/calls: newest first, bounded by `limit` and the `maxBytes` budget (512 KiB at most). */
  list(query: unknown, options?: { surface?: Surface }): Promise<Result<JsonBody<CallPage>>>;
  /** GET /v1/calltracker/calls/{id}: one visible call. */
  get(params: unknown, query?: unknown): Promise<Result<CallDetail>>;
};

/**
 * Call cursor: the last (sortKey, id) served and the normalized filters it is bound to. One-letter
 * keys on the wire (v version, k sortKey, i id, c contract, h chain) keep it short; read by name.
 */
const callCursorSchema = z
  .object({ v: z.literal(1), k: z.string(), i: z.string(), c: z.string().nullable(), h: z.string().nullable() })
  .strict()
  .transform((wire) => ({ sortKey: wire.k, id: wire.i, contract: wire.c, chain: wire.h }));
type CallCursor = z.output<typeof callCursorSchema>;
const encodeCallCursor = (c: CallCursor): string =>
  encodeCursor({ v: 1, k: c.sortKey, i: c.id, c: c.contract, h: c.chain } satisfies z.input<typeof callCursorSchema>);

type Filters = { contract: string | null; chain: string | null };

const describeFilters = (f: Filters) =>
  f.contract === null
    ? 'no contract or chain filter'
    : f.chain === null
      ? `contract=${f.contract} without chain`
      : `contract=${f.contract} and chain=${f.chain}`;

/** Newest first: createdAt (as its sort key) descending, ties by id descending. */
function newerFirst(a: StoredDoc, b: StoredDoc): number {
  if (a.sortKey !== b.sortKey) return a.sortKey < b.sortKey ? 1 : -1;
  if (a.id === b.id) return 0;
  return a.id < b.id ? 1 : -1;
}

/** Whether a row comes strictly after the cursor position in listing order. */
const isAfter = (row: StoredDoc, position: { sortKey: string; id: string }) =>
  row.sortKey < position.sortKey || (row.sortKey === position.sortKey && row.id < position.id);

/** Bytes a value adds to the page on the given surface (see `Surface`). */
function sizeOnSurface(json: string, surface: Surface): number {
  const plain = Buffer.byteLength(json, 'utf8');
  if (surface === 'rest') return plain;
  // The text block holds JSON.stringify(page) as a string: escaping is per character, so the
  // escaped size of the page is the sum of the escaped sizes of its parts.
  return plain + Buffer.byteLength(JSON.stringify(json), 'utf8') - 2;
}

/** A call as served at read time: its JSON text (made once) and, for the tool surface, its value. */
export type ServedCall = { json: string; value(): CallRecord };

/**
 * The calls that fit the page: whole calls while the page stays within `budget` bytes on the surface,
 * at least one. The envelope is measured with a longest possible `next`, so the real page (whose
 * `next` is that long at most) stays inside. Each call's text is the one the page is sent with.
 */
export function fitCalls<C extends { json: string }>(
  calls: readonly C[],
  envelope: Omit<CallPage, 'calls' | 'next'>,
  budget: number,
  surface: Surface,
): C[] {
  let used = sizeOnSurface(
    JSON.stringify({ calls: [], next: 'x'.repeat(CURSOR_MAX), ...envelope } satisfies CallPage),
    surface,
  );
  const comma = sizeOnSurface(',', surface);
  const served: C[] = [];
  for (const call of calls) {
    const size = sizeOnSurface(call.json, surface) + (served.length > 0 ? comma : 0);
    // A page always holds at least one call, even one that alone exceeds the budget.
    if (served.length > 0 && used + size > budget) break;
    served.push(call);
    used += size;
  }
  return served;
}

/** Project links kept at most (a link is a few hundred bytes); past that the kept ones are dropped. */
const LINKS_KEPT_MAX = 20_000;

export type CallsDeps = {
  store: ReadStore;
  now?: () => Date;
  /** The serving read-model generation (a replay's new generation may hold other bytes at the same checkpoints). */
  generation?: () => number;
  /** Rendered call pages, kept while what they were read from is unchanged and no pnl has started or stopped being served; none when absent. */
  bodies?: BodyCache;
};

/** Every read model a call page is read from: the calls, their index, the collector's freshness and the projects (token links). */
const CALL_PAGE_SOURCES = [
  CALLS_COLLECTION,
  CALL_INDEX_COLLECTION,
  CALLS_COLLECTOR_COLLECTION,
  PROJECTS_COLLECTION,
] as const;

export function createCallsService(deps: CallsDeps): CallsService {
  const { store, bodies } = deps;
  const now = deps.now ?? (() => new Date());
  const generation = deps.generation ?? (() => 0);

  /**
   * Token project links (and their JSON text) by `<chain>:<contract>`, kept while the projects read
   * model's checkpoint (in the serving generation) is unchanged: a link depends on nothing else. The
   * version is read before the projects, so what is kept is never older than it.
   */
  const kept = createVersionedMap<{ link: CallProject | null; json: string }>(LINKS_KEPT_MAX);

  async function freshness(): Promise<CallFreshness> {
    return (await store.get<CallFreshness>(CALLS_COLLECTOR_COLLECTION, COLLECTOR_DOC_ID))?.doc ?? EMPTY_FRESHNESS;
  }

  /** Project links by `<chain>:<contract>`: the one current public project holding it, else null. */
  async function projectLinks(
    calls: readonly ReadTimeFields[],
  ): Promise<Map<string, { link: CallProject | null; json: string }>> {
    const wanted = new Set<string>();
    for (const call of calls) for (const token of call.tokens) wanted.add(linkKey(token));
    const links = new Map<string, { link: CallProject | null; json: string }>();
    if (wanted.size === 0) return links;
    const version: CacheVersion = [generation(), await store.checkpoint(PROJECTS_COLLECTION)];
    const missing: string[] = [];
    for (const key of wanted) {
      const link = kept.get(version, key);
      if (link) links.set(key, link);
      else missing.push(key);
    }
    if (missing.length === 0) return links;
    // Two reads for the rest of the page: the holders of every token, then those projects.
    const holders = await store.findIdsMany(PROJECTS_COLLECTION, 'chainContract', missing, 10);
    const docs = await store.getMany<Project>(PROJECTS_COLLECTION, [...new Set([...holders.values()].flat())]);
    for (const key of missing) {
      const public_ = (holders.get(key) ?? []).map((id) => docs.get(id)).filter((d) => isPublicProject(d));
      const link = public_.length === 1 ? callProjectOf(public_[0]!.doc) : null;
      const entry = { link, json: JSON.stringify(link) };
      links.set(key, entry);
      kept.set(version, key, entry);
    }
    return links;
  }

  function linkKey(token: StoredCall['tokens'][number]): string {
    return `${tokenChain(token)}:${normalizeContract(token.contract)}`;
  }

  /** The call as served at `readAt`: pnl aged out, token project links from the current projects. */
  async function atReadTime(calls: readonly StoredCall[], readAt: Date): Promise<CallRecord[]> {
    const links = await projectLinks(calls);
    return calls.map((call) => servedCall(call, readAt, links));
  }

  function servedCall(call: StoredCall, readAt: Date, links: Map<string, { link: CallProject | null }>): CallRecord {
    return {
      ...call,
      caller: { ...call.caller, pnl: pnlAtReadTime(call.caller.pnl, readAt) },
      tokens: call.tokens.map((token) => ({ ...token, project: links.get(linkKey(token))?.link ?? null })),
    };
  }

  /**
   * `atReadTime` for stored rows, as text made from each row's stored text (see `servedCallText`):
   * only the tokens and pnl are parsed; the whole record only when the tool surface asks for values.
   */
  async function servedAtReadTime(
    rows: readonly StoredDoc<StoredCall>[],
    readAt: Date,
  ): Promise<{ served: ServedCall[]; fields: ReadTimeFields[] }> {
    const fields = rows.map((row) => readTimeFieldsOf(row.json) ?? row.doc);
    const links = await projectLinks(fields);
    const served = rows.map((row, i) => {
      const call = fields[i]!;
      let value: CallRecord | undefined;
      const served = () => (value ??= servedCall(row.doc, readAt, links));
      const json = servedCallText(
        row.json,
        call,
        pnlAtReadTime(call.caller.pnl, readAt),
        call.tokens.map((t) => links.get(linkKey(t))?.json ?? 'null'),
        served,
      );
      return { json, value: served };
    });
    return { served, fields };
  }

  /**
   * Visible calls after the cursor position, newest first: `take` of them at most (the caller
   * asks for one more than it serves, to know whether anything is left).
   */
  async function candidates(
    filters: Filters,
    after: { sortKey: string; id: string } | null,
    take: number,
  ): Promise<Result<StoredDoc<StoredCall>[]>> {
    if (filters.contract === null) {
      return ok(
        await store.listKeyset<StoredCall>(CALLS_COLLECTION, {
          facets: [CALL_FACETS.visible],
          ...(after ? { before: after } : {}),
          limit: take,
        }),
      );
    }
    const [key, value] =
      filters.chain === null
        ? [CALL_KEYS.contract, filters.contract]
        : [CALL_KEYS.chainContract, `${filters.chain}:${filters.contract}`];
    const ids = await store.findIds(CALL_INDEX_COLLECTION, key, value, CONTRACT_CANDIDATES_MAX + 1);
    // Refused on the index alone, before any call payload is read.
    if (ids.length > CONTRACT_CANDIDATES_MAX) {
      return fail(
        errors.badRequest(
          `the contract filter matches more than ${CONTRACT_CANDIDATES_MAX} calls; ${filters.chain === null ? "add 'chain' to narrow it, or " : ''}page the unfiltered listing (no 'contract') for broader histories`,
        ),
      );
    }
    if (ids.length === 0) return ok([]);
    // Candidates are picked and ordered on the payload-free index ...
    const entries = [...(await store.getMany(CALL_INDEX_COLLECTION, ids)).values()].filter(
      (d) => d.facet === CALL_FACETS.visible,
    );
    entries.sort(newerFirst);
    const ordered = after ? entries.filter((d) => isAfter(d, after)) : entries;
    // ... and only the page's payloads are read, each checked for suppression now (there is no call
    // cache; the index may trail the records by a batch, so the record decides).
    const picked: StoredDoc<StoredCall>[] = [];
    for (let i = 0; picked.length < take && i < ordered.length;) {
      const chunk = ordered.slice(i, i + take - picked.length);
      i += chunk.length;
      const docs = await store.getMany<StoredCall | null>(
        CALLS_COLLECTION,
        chunk.map((d) => d.id),
      );
      for (const entry of chunk) {
        const stored = docs.get(entry.id);
        // The row as read, with the index entry's order key (its document is parsed only if asked for).
        if (stored && stored.facet === CALL_FACETS.visible && stored.json !== 'null') {
          picked.push(withSortKey(stored as StoredDoc<StoredCall>, entry.sortKey));
        }
      }
    }
    return ok(picked);
  }

  function parseFilters(contract: string | undefined, chain: string | undefined): Result<Filters> {
    if (chain !== undefined && contract === undefined) {
      return fail(
        errors.badRequest("parameter 'chain' is allowed only together with 'contract'; add 'contract' or drop 'chain'"),
      );
    }
    return ok({
      contract: contract === undefined ? null : normalizeContract(contract),
      chain: chain === undefined ? null : normalizeChain(chain),
    });
  }

  function parseCursor(cursor: string | undefined, filters: Filters): Result<{ sortKey: string; id: string } | null> {
    if (cursor === undefined) return ok(null);
    const decoded = decodeCursor(callCursorSchema, cursor);
    if (!decoded.ok) {
      return fail(
        errors.badRequest(
          "parameter 'cursor' is not a cursor this service issued; send the 'next' value of a page unchanged, or drop 'cursor' to start from the newest call",
        ),
      );
    }
    const bound: Filters = { contract: decoded.value.contract, chain: decoded.value.chain };
    if (bound.contract !== filters.contract || bound.chain !== filters.chain) {
      return fail(
        errors.badRequest(
          `parameter 'cursor' was issued for ${describeFilters(bound)}, but this request has ${describeFilters(filters)}; send the same contract and chain filters as the request that returned it, or drop 'cursor' to start again`,
        ),
      );
    }
    return ok({ sortKey: decoded.value.sortKey, id: decoded.value.id });
  }

  /**
   * The version a call page is kept under: the generation, and the sum of its sources' checkpoints.
   * Within a generation each checkpoint only moves forward, so the sum moves exactly when one of them does.
   */
  async function pageVersion(): Promise<CacheVersion> {
    // Asked together: on a networked store they are separate round trips.
    const checkpoints = await Promise.all(CALL_PAGE_SOURCES.map(async (collection) => store.checkpoint(collection)));
    return [generation(), checkpoints.reduce((sum, checkpoint) => sum + checkpoint, 0)];
  }

  async function list(query: unknown, options: { surface?: Surface } = {}): Promise<Result<JsonBody<CallPage>>> {
    const surface = options.surface ?? 'rest';
    const parsed = parseParams(callsQuerySchema, query);
    if (!parsed.ok) return fail(errors.badRequest(parsed.message));
    const q = parsed.value;
    const filters = parseFilters(q.contract, q.chain);
    if (!filters.ok) return filters;
    const position = parseCursor(q.cursor, filters.value);
    if (!position.ok) return position;
    const limit = q.limit ?? CALL_PAGE_DEFAULT;
    const budget = (q.maxBytes ?? CALL_PAGE_BUDGET_BYTES) - (surface === 'mcp' ? MCP_ENVELOPE_RESERVE_BYTES : 0);
    const page = { filters: filters.value, after: position.value, limit, budget, surface };
    if (!bodies) return (await readPage(page, now())).page;

    // The version is read before the data, so the page kept under it is never older than it.
    const version = await pageVersion();
    const key = `calls ${JSON.stringify([surface, filters.value.contract, filters.value.chain, position.value, limit, budget])}`;
    const readAt = now();
    const cached = bodies.get(version, key, readAt.getTime());
    if (cached) return ok(withReadAt<CallPage>(cached, readAt.toISOString()));
    const { page: result, span } = await readPage(page, readAt);
    if (result.ok) bodies.set(version, key, result.value, span);
    return result;
  }

  type PageQuery = {
    filters: Filters;
    after: { sortKey: string; id: string } | null;
    limit: number;
    budget: number;
    surface: Surface;
  };

  /** One call page as read at `readAt`, and the read times it stays the same for (but for readAt). */
  async function readPage(
    query: PageQuery,
    readAt: Date,
  ): Promise<{ page: Result<JsonBody<CallPage>>; span: TimeSpan }> {
    const { filters, after, limit, budget, surface } = query;
    const rows = await candidates(filters, after, limit + 1);
    const always = { from: -Infinity, until: Infinity };
    if (!rows.ok) return { page: rows, span: always };
    const [calls, fresh] = await Promise.all([servedAtReadTime(rows.value.slice(0, limit), readAt), freshness()]);

    const envelope = { limit, readAt: readAt.toISOString(), freshness: fresh };
    const served = fitCalls(calls.served, envelope, budget, surface);

    const more = rows.value.length > served.length;
    const last = served[served.length - 1];
    const lastRow = last ? rows.value[served.length - 1]! : null;
    const next = more && lastRow ? encodeCallCursor({ sortKey: lastRow.sortKey, id: lastRow.id, ...filters }) : null;
    const page = jsonBody<CallPage, 'calls'>({
      calls: {
        raw: true,
        bytes: () => `[${served.map((c) => c.json).join(',')}]`,
        value: () => served.map((c) => c.value()),
      },
      next,
      ...envelope,
    });
    return { page: ok(page), span: pnlSpan(calls.fields, readAt) };
  }

  return {
    list,

    async get(params, query) {
      const parsed = parseParams(callParamsSchema, params);
      if (!parsed.ok) return fail(errors.badRequest(parsed.message));
      const q = parseParams(callQuerySchema, query);
      if (!q.ok) return fail(errors.badRequest(q.message));
      const stored = await store.get<StoredCall | null>(CALLS_COLLECTION, callDocId(parsed.value.id));
      if (!stored || stored.facet !== CALL_FACETS.visible || stored.doc === null) {
        // Unknown and suppressed answer alike, so a suppression is not disclosed.
        return fail(errors.notFound(`no call with id '${echoed(parsed.value.id)}'`));
      }
      const readAt = now();
      const [[call], fresh] = await Promise.all([atReadTime([stored.doc], readAt), freshness()]);
      return ok({ call: call!, readAt: readAt.toISOString(), freshness: fresh });
    },
  };
}
