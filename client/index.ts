/**
 * `pulseboard/client`: a typed client for the REST reads. Every method answers a Result (the value,
 * or a ClientError with code, message, status and retryAfterSeconds); 429 and 503 are waited out as
 * Retry-After says, within a budget per call and cancellable with an AbortSignal.
 */
import { changeFeed, type ChangeFeed, type ChangesOptions } from './changes.ts';
import { call, isLoopback, type HttpOptions, type Send } from './http.ts';
import type {
  AskList,
  AsOfAnswer,
  BoardPage,
  BoardPageAsOf,
  BoardQuery,
  CallDetail,
  CallOptions,
  CallPage,
  CallsQuery,
  ClientError,
  DeltaAnswer,
  DeltaQuery,
  DiffQuery,
  Exactly,
  HistoryQuery,
  ProjectDiff,
  ProjectHistory,
  ProjectQuery,
  ProjectRead,
  ProjectReadAsOf,
  ProjectSearch,
  ProjectSearchAsOf,
  PulseList,
  PulseOne,
  Result,
  SearchOptions,
  ThesisStatus,
} from './types.ts';
import { walkPages, type PageStep, type PageWalkOptions } from './pages.ts';

export type * from './types.ts';
export type { ChangeFeed, ChangeStep, ChangesOptions } from './changes.ts';
export type { PageStep, PageWalkOptions } from './pages.ts';

/** The diff walked page by page: its two points (or a `next` to resume from) and the page size. */
export type DiffPagesOptions = DiffQuery & PageWalkOptions;

export type ClientOptions = {
  /** Where the service listens, e.g. http://127.0.0.1:8080 (without /v1). */
  baseUrl: string;
  /** An API key, pbk_…. */
  key: string;
  /** Another fetch (tests, proxies, instrumentation); default: node:http on Node, the global fetch elsewhere. */
  fetch?: typeof globalThis.fetch;
  /** Seconds one call may spend waiting out 429/503 and lost connections before it fails; default 120. */
  maxWaitSeconds?: number;
  /**
   * Ask for compressed answers (the service then gzips or brotli-compresses each body). Default: yes,
   * except for a service on this machine (a loopback address), where compressing and decompressing
   * cost both ends CPU and save no network.
   */
  compression?: boolean;
  /** Told before each wait (a 429/503 or a lost connection about to be retried), e.g. to show it. */
  onWait?: (error: ClientError, seconds: number) => void;
};

export type Client = ReturnType<typeof createClient>;

const DEFAULT_MAX_WAIT_SECONDS = 120;
const segment = (value: string) => encodeURIComponent(value);
const onNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

/**
 * Without a fetch given, Node sends through node:http (node-http.ts, loaded on first use so the
 * client still loads where there is none); elsewhere the global fetch sends.
 */
function defaultSend(): Send {
  const fetchSend: Send = (url, init) => globalThis.fetch(url, init);
  if (!onNode) return fetchSend;
  let loaded: Promise<Send> | null = null;
  return async (url, init) => {
    loaded ??= import('./node-http.ts').then(({ nodeSend }) => nodeSend(fetchSend));
    return (await loaded)(url, init);
  };
}

export function createClient(options: ClientOptions) {
  const http: HttpOptions = {
    baseUrl: options.baseUrl,
    key: options.key,
    send: options.fetch ?? defaultSend(),
    maxWaitSeconds: options.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS,
    compression: options.compression ?? !isLoopback(options.baseUrl),
    ...(options.onWait ? { onWait: options.onWait } : {}),
  };
  const get = <T>(
    path: string,
    query: Record<string, unknown> | undefined,
    callOptions: CallOptions | undefined,
    holdSeconds?: number,
  ) =>
    call<T>(
      http,
      {
        method: 'GET',
        path,
        query: query as Record<string, string | number | boolean | undefined>,
        ...(holdSeconds ? { holdSeconds } : {}),
      },
      callOptions,
    );

  const delta = <Q extends DeltaQuery>(
    query: Exactly<Q, DeltaQuery>,
    callOptions?: CallOptions,
  ): Promise<Result<DeltaAnswer<Q>>> =>
    get<DeltaAnswer<Q>>('/v1/projects', query, callOptions, Number(query.wait ?? 0));
  const diff = (query: DiffQuery, callOptions?: CallOptions): Promise<Result<ProjectDiff>> =>
    get<ProjectDiff>('/v1/projects/diff', query, callOptions);
  const diffPages = ({ from, to, cursor, limit, ...walk }: DiffPagesOptions): AsyncIterable<PageStep<ProjectDiff>> => {
    const first: DiffQuery = cursor === undefined ? { from: from!, to, limit } : { cursor, limit };
    return walkPages(
      (next, _hold, o) => diff(next === null ? first : { cursor: next, limit }, o),
      (page) => (page.next === null ? null : { cursor: page.next, hold: false }),
      walk,
    );
  };

  return {
    projects: {
      /** GET /v1/projects in board mode: 50 a page, newest first; with `asOf`, as the board stood then. */
      board: <Q extends BoardQuery = Record<never, never>>(query?: Exactly<Q, BoardQuery>, callOptions?: CallOptions) =>
        get<AsOfAnswer<Q, BoardPage, BoardPageAsOf>>('/v1/projects', query ?? {}, callOptions),
      /** GET /v1/projects in delta mode: one page from `since` or `cursor` (with `wait`, a long-poll). */
      delta,
      /** The delta as an async iterator of pages that keeps its place (see ChangeFeed). */
      changes: (changesOptions: ChangesOptions): ChangeFeed => changeFeed(delta, changesOptions),
      /** GET /v1/projects/diff: one page of the net changes between two points (follow `next` as `cursor`). */
      diff,
      /** The diff as an async iterator of pages, from its two points or a `next` (see walkPages). */
      diffPages,
      /** GET /v1/projects/{handle}: by id or handle; include=context, asOf. */
      get: <Q extends ProjectQuery = Record<never, never>>(
        handle: string,
        query?: Exactly<Q, ProjectQuery>,
        callOptions?: CallOptions,
      ) =>
        get<AsOfAnswer<Q, ProjectRead, ProjectReadAsOf>>(`/v1/projects/${segment(handle)}`, query ?? {}, callOptions),
      /** GET /v1/projects/{handle}/history: the project's writes, newest first, cursor-paged. */
      history: (handle: string, query: HistoryQuery = {}, callOptions?: CallOptions) =>
        get<ProjectHistory>(`/v1/projects/${segment(handle)}/history`, query, callOptions),
      /** GET /v1/projects/{handle}/ask: research asks and answers (allowlisted owners). */
      asks: (handle: string, callOptions?: CallOptions) =>
        get<AskList>(`/v1/projects/${segment(handle)}/ask`, undefined, callOptions),
    },
    /** GET /v1/search?q=…: a project by id, contract, chain:contract, website or social profile; `asOf`. */
    search: <Q extends SearchOptions = Record<never, never>>(
      q: string,
      query?: Exactly<Q, SearchOptions>,
      callOptions?: CallOptions,
    ) => get<AsOfAnswer<Q, ProjectSearch, ProjectSearchAsOf>>('/v1/search', { ...query, q }, callOptions),
    calls: {
      /** GET /v1/calltracker/calls: follow `next` with the same contract/chain until null. */
      list: (query: CallsQuery = {}, callOptions?: CallOptions) =>
        get<CallPage>('/v1/calltracker/calls', query, callOptions),
      /** GET /v1/calltracker/calls/{id}. */
      get: (id: string, callOptions?: CallOptions) =>
        get<CallDetail>(`/v1/calltracker/calls/${segment(id)}`, undefined, callOptions),
    },
    pulse: {
      /** GET /v1/pulse: the eight beats. */
      list: (callOptions?: CallOptions) => get<PulseList>('/v1/pulse', undefined, callOptions),
      /** GET /v1/pulse/{beat}. */
      get: (beat: string, callOptions?: CallOptions) =>
        get<PulseOne>(`/v1/pulse/${segment(beat)}`, undefined, callOptions),
    },
    thesisFeed: {
      /** GET /v1/thesisfeed/theses?contract=…: status and snapshot, starting nothing. */
      get: (contract: string, callOptions?: CallOptions) =>
        get<ThesisStatus>('/v1/thesisfeed/theses', { contract }, callOptions),
      /** POST /v1/thesisfeed/theses: 200 with a fresh result, or 202 queued (`status` tells which). */
      request: (contract: string, callOptions?: CallOptions) =>
        call<ThesisStatus>(http, { method: 'POST', path: '/v1/thesisfeed/theses', body: { contract } }, callOptions),
    },
  };
}
