/**
 * The client's shapes, inferred from the server's own zod schemas (type-only imports: nothing of the
 * server is loaded at run time). Inputs are what the schemas accept, outputs what they produce.
 */
import type { z } from 'zod';
import type {
  ErrorCode,
  projectReadSchema,
  projectSearchSchema,
  pulseListSchema,
  pulseOneSchema,
} from '../readmodels/schemas.ts';
import type { callsQuerySchema } from '../service/requests/calls.ts';
import type { SyncPageChanges } from '../readmodels/history-schemas.ts';
import type { SyncPage } from '../readmodels/schemas.ts';
import type {
  boardQuerySchema,
  diffQuerySchema,
  projectAsOfQuerySchema,
  searchAsOfQuerySchema,
} from '../service/requests/history-board.ts';
import type { historyQuerySchema } from '../service/requests/history.ts';

export type {
  AskList,
  BoardPage,
  CallDetail,
  CallPage,
  Project,
  ProjectHistory,
  SyncPage,
  ThesisStatus,
} from '../readmodels/schemas.ts';
/** The answers of reads given `asOf` (the live shapes with the point), and of a delta page with include=changes. */
export type {
  AsOfPoint,
  BoardPageAsOf,
  ChangedFields,
  ProjectChange,
  ProjectDiff,
  ProjectReadAsOf,
  ProjectSearchAsOf,
  SyncPageChanges,
} from '../readmodels/history-schemas.ts';
export type ProjectRead = z.output<typeof projectReadSchema>;
export type ProjectSearch = z.output<typeof projectSearchSchema>;
export type PulseList = z.output<typeof pulseListSchema>;
export type PulseOne = z.output<typeof pulseOneSchema>;

type ProjectsInput = z.input<typeof boardQuerySchema>;
/** Board mode of GET /v1/projects, live or `asOf` a point. */
export type BoardQuery = Pick<ProjectsInput, 'page' | 'has_dossier' | 'asOf'>;
/** Delta mode of GET /v1/projects: exactly one of `since` and `cursor`. */
export type DeltaQuery = Pick<ProjectsInput, 'limit' | 'has_dossier' | 'wait' | 'include'> &
  ({ since: NonNullable<ProjectsInput['since']>; cursor?: never } | { cursor: string; since?: never });
export type ProjectQuery = z.input<typeof projectAsOfQuerySchema>;
/** GET /v1/search beside `q`: `asOf`. */
export type SearchOptions = Omit<z.input<typeof searchAsOfQuerySchema>, 'q'>;
export type HistoryQuery = z.input<typeof historyQuerySchema>;
export type CallsQuery = z.input<typeof callsQuerySchema>;
type DiffInput = z.input<typeof diffQuerySchema>;
/** GET /v1/projects/diff: `from` (and `to`, default now) to start, or `cursor` (a page's `next`) to continue. */
export type DiffQuery = Pick<DiffInput, 'limit'> &
  (
    | { from: NonNullable<DiffInput['from']>; to?: DiffInput['to']; cursor?: never }
    | { cursor: string; from?: never; to?: never }
  );

/**
 * What a read answers for its query: the as-of shape when the query names `asOf`, the live one when
 * it cannot, either when it may.
 */
export type AsOfAnswer<Q, Live, AtPoint> = Q extends { asOf: string }
  ? AtPoint
  : 'asOf' extends keyof Q
    ? Q['asOf' & keyof Q] extends undefined
      ? Live
      : Live | AtPoint
    : Live;
/** A query of shape `Shape` with nothing else: a generic parameter escapes excess-property checks otherwise. */
export type Exactly<Q, Shape> = Q & Record<Exclude<keyof Q, keyof Shape>, never>;
/** A delta page for its query: with `changes` when it asks for include=changes. */
export type DeltaAnswer<Q> = Q extends { include: 'changes' }
  ? SyncPageChanges
  : 'include' extends keyof Q
    ? Q['include' & keyof Q] extends undefined
      ? SyncPage
      : SyncPage | SyncPageChanges
    : SyncPage;

/**
 * Codes the client itself reports, beside the service's: no answer, a cancelled call, an answer that
 * is not the API's, a baseUrl that is not an http(s) URL.
 */
export type ClientOnlyCode = 'network_error' | 'aborted' | 'invalid_response' | 'invalid_url';

/**
 * A failed call as a value. `status` is the HTTP status (null when no answer came);
 * `retryAfterSeconds` is the server's Retry-After when it sent one (a wait longer than the call's
 * budget is returned rather than waited out). Thesis-feed operations may carry feed-specific codes.
 */
export type ClientError = {
  code: ErrorCode | ClientOnlyCode | (string & {});
  message: string;
  status: number | null;
  retryAfterSeconds: number | null;
};

export type Result<T> = { ok: true; value: T; status: number } | { ok: false; error: ClientError };

/** Per call: cancel it, or change how long 429/503 answers and lost connections may be waited out. */
export type CallOptions = {
  signal?: AbortSignal;
  /** Total seconds one call may spend waiting before retries (default: the client's, 120). 0: never wait. */
  maxWaitSeconds?: number;
  /** Called with the page that follows, as a successful answer's `Link: <…>; rel="next"` names it, before its body is read. */
  onNext?: (next: URL) => void;
};
