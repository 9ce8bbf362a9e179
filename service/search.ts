import { normalizeChain, normalizeContract, websiteHost } from '../config/chains.ts';
import { CONTEXTS_COLLECTION, emptyContext, type StoredContext } from '../projectors/contexts.ts';
import { PROJECTS_COLLECTION, type ProjectState, isPublicProject } from '../projectors/projects.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import type { z } from 'zod';
import type { Project, projectSearchSchema, projectSearchStateSchema } from '../readmodels/schemas.ts';
import type { Access } from './access.ts';
import type { Caller } from './caller.ts';
import { createVersionedMap, type CacheVersion } from './body-cache.ts';
import { isoClock } from './clock.ts';
import { errors, fail, ok, type Result } from './errors.ts';
import { shownContext, type ProjectsService } from './projects.ts';
import { parseParams } from './requests/params.ts';
import { searchQuerySchema } from './requests/search.ts';
import { jsonBody, storedJson, validatorOf, withReadAt, type JsonBody } from './json-body.ts';

export type ProjectSearchResult = z.infer<typeof projectSearchSchema>;
type ProjectSearchState = z.infer<typeof projectSearchStateSchema>;

export type SearchService = {
  /** GET /v1/search?q=: reads only; never creates a project, starts research or appends an event. */
  search(caller: Caller, query: unknown): Promise<Result<JsonBody<ProjectSearchResult>>>;
};

/** What `q` was read as. */
export type SearchForm =
  | { kind: 'social'; handle: string }
  | { kind: 'website'; host: string }
  | { kind: 'contract'; contract: string }
  | { kind: 'chainContract'; chain: string; contract: string };

const SOCIAL_HOSTS = new Set(['x.com', 'twitter.com', 'mobile.twitter.com', 'mobile.x.com']);
const HANDLE = /^[A-Za-z0-9_]{1,50}$/;
const EVM_CONTRACT = /^0x[0-9a-fA-F]+$/;
const BASE58_CONTRACT = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const CHAIN_QUALIFIED = /^([A-Za-z][A-Za-z0-9_-]{0,59}):([^\s:/]+)$/;

/**
 * Reads `q` as one of the accepted forms, or null when it is none of them. Order matters: a URL
 * scheme before `chain:contract`, a host before a bare word, address shapes before handles.
 */
export function classifyQuery(q: string): SearchForm | null {
  if (q.startsWith('@')) {
    const handle = q.slice(1);
    return HANDLE.test(handle) ? { kind: 'social', handle } : null;
  }
  const hasScheme = SCHEME.test(q);
  if (!hasScheme) {
    const qualified = CHAIN_QUALIFIED.exec(q);
    if (qualified) return { kind: 'chainContract', chain: qualified[1]!, contract: qualified[2]! };
  }
  if (hasScheme || q.includes('/') || q.includes('.')) {
    const host = websiteHost(q);
    if (host === null) return null;
    if (SOCIAL_HOSTS.has(host)) {
      const first = new URL(hasScheme ? q : `https://${q}`).pathname.split('/').find((s) => s !== '');
      const handle = first?.replace(/^@/, '');
      if (handle && HANDLE.test(handle)) return { kind: 'social', handle };
    }
    return { kind: 'website', host };
  }
  if (EVM_CONTRACT.test(q) || BASE58_CONTRACT.test(q)) return { kind: 'contract', contract: q };
  if (HANDLE.test(q)) return { kind: 'social', handle: q };
  // Other address encodings: any single word that is not a handle.
  if (/^\S+$/.test(q)) return { kind: 'contract', contract: q };
  return null;
}

/** Search outcomes kept at most (each holds at most one stored project); past that the kept ones are dropped. */
const OUTCOMES_KEPT_MAX = 5000;

export type SearchDeps = {
  store: ReadStore;
  projects: ProjectsService;
  access: Access;
  now?: () => Date;
  /** The serving read-model generation (a replay's new generation may hold other documents at the same checkpoint). */
  generation?: () => number;
};

export function createSearchService(deps: SearchDeps): SearchService {
  const { store, projects, access } = deps;
  const readAtNow = isoClock(deps.now);
  const generation = deps.generation ?? (() => 0);

  /**
   * What `q` found, by q, kept while the projects read model's checkpoint (in the serving generation)
   * is unchanged: the outcome depends on nothing else (the caller's context is read per request).
   * The version is read before the projects, so what is kept is never older than it.
   */
  const outcomes = createVersionedMap<Outcome>(OUTCOMES_KEPT_MAX);

  async function byKey(key: string, value: string): Promise<StoredDoc<Project, ProjectState>[]> {
    return (await store.findDocs<Project, ProjectState>(PROJECTS_COLLECTION, key, value, 100)).filter((doc) =>
      isPublicProject(doc),
    );
  }

  /** `shown`: the found body as made for a caller without and with the allowlist (see FoundBody). */
  type Outcome = {
    state: ProjectSearchState;
    project: StoredDoc<Project> | null;
    shown?: [FoundBody | undefined, FoundBody | undefined];
  };

  /** The body of each state without a project: the same bytes for every q and caller, but for readAt. */
  const emptyBodies = new Map<ProjectSearchState, JsonBody<unknown>>();

  /** found / missing / ambiguous from a match list. */
  function outcome(matches: readonly StoredDoc<Project, ProjectState>[]): Outcome {
    if (matches.length === 1) return { state: 'found', project: matches[0]! };
    return { state: matches.length === 0 ? 'missing' : 'ambiguous', project: null };
  }

  async function lookUp(form: SearchForm): Promise<Outcome> {
    switch (form.kind) {
      case 'social': {
        // The project GET /v1/projects/@name returns: the newest claimant of the handle.
        const claimant = await projects.resolve(`@${form.handle}`);
        if (claimant) return { state: 'found', project: claimant };
        return outcome(await byKey('identityHandle', form.handle.toLowerCase()));
      }
      case 'website':
        return outcome(await byKey('website', form.host));
      case 'chainContract':
        return outcome(
          await byKey('chainContract', `${normalizeChain(form.chain)}:${normalizeContract(form.contract)}`),
        );
      case 'contract': {
        const contract = normalizeContract(form.contract);
        const matches = await byKey('contract', contract);
        if (matches.length <= 1) return outcome(matches);
        const chains = new Set<string>();
        for (const m of matches) {
          for (const cc of m.keys.chainContract ?? [])
            if (cc.endsWith(`:${contract}`)) chains.add(cc.slice(0, -contract.length - 1));
        }
        // A bare contract on several chains is narrowed by chain; several projects on one chain are not.
        return { state: chains.size > 1 ? 'chain_required' : 'ambiguous', project: null };
      }
    }
  }

  /** The outcome of `q`: kept, or looked up (null: q is none of the accepted forms). */
  async function outcomeOf(q: string): Promise<Outcome | null> {
    const version: CacheVersion = [generation(), await store.checkpoint(PROJECTS_COLLECTION)];
    const known = outcomes.get(version, q);
    if (known) return known;
    const found = await lookUpQuery(q);
    if (found) outcomes.set(version, q, found);
    return found;
  }

  async function lookUpQuery(q: string): Promise<Outcome | null> {
    // A stable project id wins over every other reading of q.
    const byId = await store.get<Project, ProjectState>(PROJECTS_COLLECTION, q);
    if (isPublicProject(byId)) return { state: 'found', project: byId };
    const form = classifyQuery(q);
    return form === null ? null : lookUp(form);
  }

  async function search(caller: Caller, query: unknown): Promise<Result<JsonBody<ProjectSearchResult>>> {
    const parsed = parseParams(searchQuerySchema, query);
    if (!parsed.ok) return fail(errors.badRequest(parsed.message));
    const q = parsed.value.q;
    const readAt = readAtNow();
    const result = await outcomeOf(q);
    if (result === null) {
      return fail(
        errors.badRequest(
          "parameter 'q' must be a project id, a contract (0x…, base58 …), chain:contract (base:0x…), a website (URL or bare domain) or a social profile (@name, name, x.com/name)",
        ),
      );
    }
    if (!result.project) {
      let kept = emptyBodies.get(result.state);
      if (!kept) {
        kept = jsonBody<ProjectSearchResult, never>({ state: result.state, project: null, context: null, readAt });
        emptyBodies.set(result.state, kept);
      }
      return ok(withReadAt<ProjectSearchResult>(kept, readAt));
    }
    return ok(await foundBody(caller, result, result.project, readAt));
  }

  /**
   * A found search's body, kept in its outcome per caller class (voter names or not) while the
   * contexts checkpoint is unchanged; the checkpoint is read before the context, as for the outcome.
   */
  async function foundBody(
    caller: Caller,
    result: Outcome,
    found: StoredDoc<Project>,
    readAt: string,
  ): Promise<JsonBody<ProjectSearchResult>> {
    const { allowlisted } = await access.ownerAccess(caller.owner);
    const contextsAt = await store.checkpoint(CONTEXTS_COLLECTION);
    const shown = (result.shown ??= [undefined, undefined]);
    const slot = allowlisted ? 1 : 0;
    let kept = shown[slot];
    if (kept?.contextsAt !== contextsAt) {
      const stored = (await store.get<StoredContext>(CONTEXTS_COLLECTION, found.id))?.doc ?? emptyContext();
      const made = (time: string) =>
        jsonBody<ProjectSearchResult, 'project'>({
          state: result.state,
          project: storedJson<Project | null>(found),
          context: shownContext(found.doc, stored, allowlisted, time),
          readAt,
        });
      const body = made(readAt);
      const split = foundParts(made(READ_TIME), contextsAt);
      // Kept only when this read's bytes are what it gives back (stored text could hold the placeholder).
      if (!split || !withReadTime(split, readAt).head.equals(body.head)) return body;
      if (!(kept && kept.contextsAt > contextsAt)) shown[slot] = split;
      return body;
    }
    return withReadTime(kept, readAt);
  }

  return {
    search,
  };
}

/**
 * A found search's bytes around the two times it holds, the context's `freshness.readAt` and the
 * top-level `readAt` (both the time of the read): before + time + between + time + tail.
 */
type FoundBody = { contextsAt: number; before: Buffer; between: Buffer; tail: Buffer };

/** Put where the context's read time goes while a found body is made: JSON text of itself, never a time. */
const READ_TIME = 'pulseboard-read-time';
const READ_TIME_BYTES = Buffer.from(READ_TIME);

function foundParts(body: JsonBody<unknown>, contextsAt: number): FoundBody | null {
  const at = body.head.indexOf(READ_TIME_BYTES);
  if (body.tail === null || at < 0) return null;
  return {
    contextsAt,
    before: body.head.subarray(0, at),
    between: body.head.subarray(at + READ_TIME_BYTES.length),
    tail: body.tail,
  };
}

/** The body of this read: its time in the context, and (as every body) at readAt; the validator covers the first. */
function withReadTime<T>(kept: FoundBody, readAt: string): JsonBody<T> {
  const head = Buffer.concat([kept.before, Buffer.from(readAt, 'utf8'), kept.between]);
  return withReadAt<T>(
    { head, tail: kept.tail, readAt, etag: validatorOf(head, kept.tail), value: () => null },
    readAt,
  );
}
