import type { Config } from '../config/config.ts';
import { projectors } from '../projectors/registry.ts';
import { PROJECTS_COLLECTION } from '../projectors/projects.ts';
import { createAccess, createHeldKeys, type Access, type HeldKeys } from './access.ts';
import { createBodyCache, type BodyCache } from './body-cache.ts';
import { createChangeStreams, type ChangeStreams } from './changes.ts';
import { createCommitWatch, type CommitWatch } from './commit-watch.ts';
import type { LoopStatus } from './background.ts';
import { createAsksService, type AsksService } from './asks.ts';
import { createCallsService, type CallsService } from './calls.ts';
import { createGuard, type Guard } from './guard.ts';
import { createHealth, type Health } from './health.ts';
import { createHistoryService, type HistoryService } from './history.ts';
import { createHistoryBoardService, type HistoryBoardService } from './history-board.ts';
import { createProjectsService, type ProjectsService } from './projects.ts';
import { createPulseService, type PulseService } from './pulse.ts';
import { createRateGate, type RateGate } from './rate/gate.ts';
import type { RateLimiter } from './rate/port.ts';
import { createSearchService, type SearchService } from './search.ts';
import type { Stores } from './stores.ts';
import type { WorkerHeartbeat } from './thesis/heartbeat.ts';
import { createInProcessHeartbeat } from './thesis/in-process-heartbeat.ts';
import { createThesisFeed, type ThesisFeed } from './thesis/feed.ts';

import { createBoardReads, type BoardReads } from './board-reads.ts';

/** Everything the transports call. Transports hold no business rules; these do. */
export type Services = {
  config: Config;
  stores: Stores;
  access: Access;
  /** The keys of open streams, long-polls and MCP listens, re-checked while they are held. */
  heldKeys: HeldKeys;
  guard: Guard;
  health: Health;
  projects: ProjectsService;
  /** Rendered bodies of caller-independent project reads, kept while the projects checkpoint is unchanged. */
  bodies: BodyCache;
  /** Wakes long-polls and change streams on the next commit of the projects read model; closed on shutdown. */
  commits: CommitWatch;
  changes: ChangeStreams;
  asks: AsksService;
  history: HistoryService;
  /** The board's past from the history read model: asOf reads, the diff, include=changes. */
  historyBoard: HistoryBoardService;
  /** The board, a project and search, live or as of a point: what the transports call for these reads. */
  board: BoardReads;
  thesis: ThesisFeed;
  calls: CallsService;
  search: SearchService;
  pulse: PulseService;
  now: () => Date;
};

export type ServiceDeps = {
  config: Config;
  stores: Stores;
  limiter: RateLimiter;
  /** The thesis reader's heartbeat; `serve` shares one with the reader it runs. */
  heartbeat?: WorkerHeartbeat;
  /** The states of the background loops this process supervises, reported by /readyz. */
  background?: () => Record<string, LoopStatus>;
  /** Replaces the gate built from `limiter` (tests that record what each operation counts as). */
  gate?: RateGate;
  now?: () => Date;
  /**
   * The commit watch's safety-net poll (DEFAULT_POLL_MS); a test that must see a wake by the commit signal
   * alone sets it far out.
   */
  commitPollMs?: number;
  /** How often held requests re-check their keys while idle (KEY_RECHECK_MS); tests shorten it. */
  keyRecheckMs?: number;
};

/** Bytes of rendered call pages kept. */
const CALL_BODY_CACHE_BYTES = 8 * 1024 * 1024;

export function createServices(deps: ServiceDeps): Services {
  const now = deps.now ?? (() => new Date());
  const { log, store } = deps.stores;
  const access = createAccess(store, now);
  // One watch per process: every long-poll and change stream waits on it; commits of this process wake it.
  // Fresh: a signalled commit (this process's projector worker writes through its own connection) is read now.
  const commits = createCommitWatch({
    readCheckpoint: async () => store.checkpoint(PROJECTS_COLLECTION, { fresh: true }),
    // MongoDB's change stream, where there is one: no poll while it is live.
    coverage: deps.stores.commits,
    pollMs: deps.commitPollMs ?? deps.config.PULSEBOARD_COMMIT_POLL_MS,
  });
  const heldKeys = createHeldKeys(access, deps.keyRecheckMs);
  commits.closed.addEventListener('abort', () => heldKeys.close(), { once: true });
  const unsubscribe = deps.stores.commits.subscribe((collection) => {
    if (collection === PROJECTS_COLLECTION) commits.notify();
  });
  commits.closed.addEventListener('abort', unsubscribe, { once: true });
  // Board pages, delta pages and plain project reads are served again from their rendered bytes while
  // the projects read model's checkpoint (in the serving generation) is unchanged.
  // A body is kept from its second read on (body-cache.ts): one-off reads (a mirror's walk) pass.
  const bodies = createBodyCache({ keepAfterMisses: 2 });
  const projects = createProjectsService({
    log,
    store,
    access,
    commits,
    keys: heldKeys,
    // Given, or none: without a clock of their own they stamp readAt from a text made once a millisecond.
    now: deps.now,
    bodies,
    generation: () => deps.stores.generations()?.serving ?? 0,
  });
  const search = createSearchService({
    store,
    projects,
    access,
    now: deps.now,
    generation: () => deps.stores.generations()?.serving ?? 0,
  });
  const historyBoard = createHistoryBoardService({
    log,
    store,
    access,
    projects,
    search,
    now: deps.now,
    generation: () => deps.stores.generations()?.serving ?? 0,
  });
  return {
    config: deps.config,
    stores: deps.stores,
    access,
    heldKeys,
    guard: createGuard(
      access,
      deps.gate ?? createRateGate(deps.limiter, { protocolLimit: deps.config.PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT }),
    ),
    health: createHealth({
      log,
      store,
      collections: projectors.map((p) => p.collection),
      limiter: deps.limiter,
      commitFeed: () => deps.stores.commits.feedState(),
      ...(deps.background ? { background: deps.background } : {}),
    }),
    projects,
    bodies,
    commits,
    changes: createChangeStreams({ projects, commits, history: historyBoard, keys: heldKeys }),
    asks: createAsksService({ log, store, access, projects, now }),
    history: createHistoryService({ log, projects, now }),
    thesis: createThesisFeed({
      log,
      store,
      access,
      config: deps.config,
      heartbeat: deps.heartbeat ?? createInProcessHeartbeat({ now }),
      now,
    }),
    // Call pages are served again from their rendered bytes while what they were read from is unchanged
    // (a page is at most 512 KiB; eight of the largest fit).
    calls: createCallsService({
      store,
      now,
      generation: () => deps.stores.generations()?.serving ?? 0,
      bodies: createBodyCache({ maxBytes: CALL_BODY_CACHE_BYTES, keepAfterMisses: 2 }),
    }),
    search,
    historyBoard,
    board: createBoardReads({ projects, search, history: historyBoard }),
    pulse: createPulseService({ store, now }),
    now,
  };
}
