import { normalizeChain, normalizeContract, websiteHost } from '../config/chains.ts';
import type { RecordedEvent } from '../eventstore/port.ts';
import { dataOf, type EventData } from '../events/catalogue.ts';
import type { CalltrackerSummary, FollowerStats, Project } from '../readmodels/schemas.ts';
import { isoDuration } from './duration.ts';
import type { Entity, Projector } from './projector.ts';
import { instantOf, TimedSample, timedSample } from './sample-instants.ts';

export const PROJECTS_COLLECTION = 'projects';

/** Facets of the projects collection: only `dossier` and `no_dossier` are ever served. */
export const PROJECT_FACETS = { dossier: 'dossier', noDossier: 'no_dossier', pending: 'pending' } as const;
export const PUBLIC_PROJECT_FACETS = [PROJECT_FACETS.dossier, PROJECT_FACETS.noDossier] as const;

/** A project is public (listed, readable) once sighted; before that its document is pending. */
export function isPublicProject<T extends { facet: string }>(stored: T | null | undefined): stored is T {
  return !!stored && (PUBLIC_PROJECT_FACETS as readonly string[]).includes(stored.facet);
}

const DAY_MS = 86_400_000;

type FollowerSample = { at: string; fol: number };
type CalltrackerRaw = Omit<EventData<'calltracker.checked'>, 'projectId'>;

/** Fold state the public document does not show. */
export type ProjectState = {
  /** Earliest sighting `at`; the project is public once sighted. */
  firstSeenAt: string | null;
  /** `at` of the newest sighting applied to the current fields. */
  newestSightingAt: string | null;
  /** Follower counts from sightings, ascending by `at`, pruned to what `vel` can still use. */
  samples: FollowerSample[];
  /** Log position at which the current handle was claimed (handle look-ups take the newest claim). */
  handleClaimedAt: number | null;
  /** Earliest rival listing `at`. */
  rivalListedAt: string | null;
  calltracker: CalltrackerRaw | null;
};

export type ProjectEntity = Entity<Project, ProjectState>;

export function emptyProject(id: string): Project {
  return {
    id,
    handle: null,
    identity: null,
    name: null,
    pfp: null,
    fol: null,
    followerStats: null,
    why: null,
    bio: null,
    firstSeenByUs: '1970-01-01T00:00:00.000Z',
    entry: { at: null, fol: null },
    vel: { h24: null, d7: null },
    rival: { lead: null },
    dossier: null,
    calltracker: null,
  };
}

const emptyState = (): ProjectState => ({
  firstSeenAt: null,
  newestSightingAt: null,
  samples: [],
  handleClaimedAt: null,
  rivalListedAt: null,
  calltracker: null,
});

const ms = (iso: string) => Date.parse(iso);

/** How many samples (ascending by `at`) are at or before `cutoff`: a binary search, so a sighting parses a few times, not every sample's. */
function countAtOrBefore(samples: readonly FollowerSample[], cutoff: number): number {
  let low = 0;
  let high = samples.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (instantOf(samples[mid]!) <= cutoff) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Latest sample at or before `cutoff`, or null. */
function sampleAtOrBefore(samples: readonly FollowerSample[], cutoff: number): FollowerSample | null {
  return samples[countAtOrBefore(samples, cutoff) - 1] ?? null;
}

/** `newestAt`: the newest sighting's time in milliseconds. */
function velocity(fol: number | null, newestAt: number, samples: readonly FollowerSample[]): Project['vel'] {
  if (fol === null) return { h24: null, d7: null };
  const h24 = sampleAtOrBefore(samples, newestAt - DAY_MS);
  const d7 = sampleAtOrBefore(samples, newestAt - 7 * DAY_MS);
  return { h24: h24 ? fol - h24.fol : null, d7: d7 ? fol - d7.fol : null };
}

/** Keeps every sample newer than 7 days before the newest sighting, plus the latest one older. */
function pruneSamples(samples: FollowerSample[], newestAt: number): FollowerSample[] {
  // Ascending by time: the samples at or before the cutoff come first; the latest of them stays.
  const keepFrom = Math.max(0, countAtOrBefore(samples, newestAt - 7 * DAY_MS) - 1);
  return samples.slice(keepFrom);
}

/**
 * The samples with `sample` in time order (replacing one with the same `at`), after every sample at
 * the same instant — what a stable sort of the list with `sample` appended gives, found from the
 * end, where a new sample usually belongs.
 */
function insertSample(samples: readonly FollowerSample[], sample: TimedSample): FollowerSample[] {
  const next: FollowerSample[] = [];
  for (const s of samples) if (s.at !== sample.at) next.push(timedSample(s));
  const time = sample.instant;
  let index = next.length;
  while (index > 0 && instantOf(next[index - 1]!) > time) index -= 1;
  next.splice(index, 0, sample);
  return next;
}

export function rivalLead(firstSeenAt: string | null, rivalAt: string | null): string | null {
  if (firstSeenAt === null || rivalAt === null) return null;
  const lead = ms(rivalAt) - ms(firstSeenAt);
  return lead > 0 ? isoDuration(lead) : null;
}

function calltrackerSummary(raw: CalltrackerRaw): CalltrackerSummary {
  const complete = raw.historyComplete;
  const firstMcap = complete ? (raw.firstMcap ?? null) : null;
  const mcap = raw.mcap ?? null;
  return {
    status: raw.status,
    historyComplete: complete,
    posts: raw.posts,
    firstAt: complete ? (raw.firstAt ?? null) : null,
    firstMcap,
    firstCaller: complete ? (raw.firstCaller ?? null) : null,
    latestAt: raw.latestAt ?? null,
    mcap,
    multiple: complete && firstMcap !== null && firstMcap !== 0 && mcap !== null ? mcap / firstMcap : null,
    checkedAt: raw.at,
  };
}

/** Lookup keys: `handle` (the project's own, for reads by handle) and those search and call-token links use. */
export function projectKeys(doc: Project): Record<string, string[]> {
  const handles = new Set<string>();
  const identityHandles = new Set<string>();
  const contracts = new Set<string>();
  const chainContracts = new Set<string>();
  const websites = new Set<string>();
  if (doc.handle) handles.add(doc.handle.toLowerCase());
  const addContract = (contract: string | null, chain: string | null) => {
    if (!contract) return;
    const c = normalizeContract(contract);
    contracts.add(c);
    if (chain) chainContracts.add(`${normalizeChain(chain)}:${c}`);
  };
  const addSite = (site: string | null) => {
    const host = site ? websiteHost(site) : null;
    if (host) websites.add(host);
  };
  if (doc.identity) {
    addContract(doc.identity.contract, doc.identity.chain);
    addSite(doc.identity.website);
    if (doc.identity.handle) identityHandles.add(doc.identity.handle.replace(/^@/, '').toLowerCase());
  }
  if (doc.dossier) {
    if (doc.dossier.token) addContract(doc.dossier.token.contract, doc.dossier.token.chain);
    addSite(doc.dossier.links.site);
  }
  return {
    handle: [...handles].sort(),
    identityHandle: [...identityHandles].sort(),
    contract: [...contracts].sort(),
    chainContract: [...chainContracts].sort(),
    website: [...websites].sort(),
  };
}

function applySighting(doc: Project, state: ProjectState, d: EventData<'project.sighted'>, position: number): void {
  const at = ms(d.at);
  if (typeof d.fol === 'number') {
    state.samples = insertSample(state.samples, new TimedSample(d.at, d.fol));
  }
  if (state.firstSeenAt === null || at < ms(state.firstSeenAt)) {
    state.firstSeenAt = d.at;
    doc.firstSeenByUs = d.at;
    doc.entry = { at: d.at, fol: d.fol ?? null };
  }
  // An older sighting only feeds the follower history (docs/source-messages.md), never the current fields.
  let newestAt = state.newestSightingAt === null ? null : ms(state.newestSightingAt);
  if (newestAt === null || at >= newestAt) {
    state.newestSightingAt = d.at;
    newestAt = at;
    if (d.handle !== undefined) {
      const handle = d.handle === null ? null : d.handle.replace(/^@/, '');
      if (handle?.toLowerCase() !== doc.handle?.toLowerCase())
        state.handleClaimedAt = handle === null ? null : position;
      doc.handle = handle;
    }
    if (d.identity !== undefined) doc.identity = d.identity;
    if (d.name !== undefined) doc.name = d.name;
    if (d.pfp !== undefined) doc.pfp = d.pfp;
    if (d.fol !== undefined) doc.fol = d.fol;
    if (d.why !== undefined) doc.why = d.why;
    if (d.bio !== undefined) doc.bio = d.bio;
  }
  state.samples = pruneSamples(state.samples, newestAt);
  doc.vel = velocity(doc.fol, newestAt, state.samples);
}

function applyFollowers(doc: Project, d: EventData<'followers.observed'>): void {
  // Observations dated after the message's own time are not verified yet.
  if (ms(d.checkedAt) > ms(d.at)) return;
  if (doc.followerStats && ms(doc.followerStats.checkedAt) >= ms(d.checkedAt)) return;
  const stats: FollowerStats = {
    source: d.source,
    handle: d.handle.replace(/^@/, ''),
    value: d.value,
    checkedAt: d.checkedAt,
  };
  doc.followerStats = stats;
}

export function foldProject(current: ProjectEntity | null, event: RecordedEvent): ProjectEntity {
  const projectId = (event.data as { projectId: string }).projectId;
  // Copy-on-write: every change below replaces a top-level field (nested values are replaced, never
  // edited), so shallow copies keep `current` — and the event's data the doc may share — unchanged.
  const doc: Project = current ? { ...current.doc } : emptyProject(projectId);
  const state: ProjectState = current ? { ...current.state } : emptyState();

  switch (event.type) {
    case 'project.sighted':
      applySighting(doc, state, dataOf('project.sighted', event.data), event.position);
      break;
    case 'rival.listed': {
      const { at } = dataOf('rival.listed', event.data);
      if (state.rivalListedAt === null || ms(at) < ms(state.rivalListedAt)) state.rivalListedAt = at;
      break;
    }
    case 'followers.observed':
      applyFollowers(doc, dataOf('followers.observed', event.data));
      break;
    case 'dossier.written':
      doc.dossier = dataOf('dossier.written', event.data).dossier;
      break;
    case 'onchain.checked':
      if (doc.dossier) doc.dossier = { ...doc.dossier, onchain: dataOf('onchain.checked', event.data).onchain };
      break;
    case 'calltracker.checked': {
      const { projectId: _ignored, ...raw } = dataOf('calltracker.checked', event.data);
      const previous = state.calltracker;
      // An absent field keeps the stored value (docs/source-messages.md); status, historyComplete and posts always come.
      state.calltracker = {
        ...raw,
        firstAt: raw.firstAt !== undefined ? raw.firstAt : (previous?.firstAt ?? null),
        firstMcap: raw.firstMcap !== undefined ? raw.firstMcap : (previous?.firstMcap ?? null),
        firstCaller: raw.firstCaller !== undefined ? raw.firstCaller : (previous?.firstCaller ?? null),
        latestAt: raw.latestAt !== undefined ? raw.latestAt : (previous?.latestAt ?? null),
        mcap: raw.mcap !== undefined ? raw.mcap : (previous?.mcap ?? null),
      };
      doc.calltracker = calltrackerSummary(state.calltracker);
      break;
    }
    default:
      break;
  }
  // What follows is derived from a few fields only, and the fold replaces a field whenever it
  // changes it (copy-on-write): while those are the very same values, the derived ones are too, and
  // are taken over instead of made again for every event (new URL per website, sorting, a date parse).
  const sighted = state.firstSeenAt !== null;
  if (
    current === null ||
    state.firstSeenAt !== current.state.firstSeenAt ||
    state.rivalListedAt !== current.state.rivalListedAt
  ) {
    doc.rival = { lead: rivalLead(state.firstSeenAt, state.rivalListedAt) };
  }
  const sameKeySources =
    current !== null &&
    sighted === (current.state.firstSeenAt !== null) &&
    doc.handle === current.doc.handle &&
    doc.identity === current.doc.identity &&
    doc.dossier === current.doc.dossier;
  return {
    doc,
    state,
    // Sources may send any UTC offset; the listing order compares instants, not spellings.
    sortKey:
      current !== null && doc.firstSeenByUs === current.doc.firstSeenByUs
        ? current.sortKey
        : new Date(doc.firstSeenByUs).toISOString(),
    facet: !sighted ? PROJECT_FACETS.pending : doc.dossier ? PROJECT_FACETS.dossier : PROJECT_FACETS.noDossier,
    keys: sameKeySources ? current.keys : sighted ? projectKeys(doc) : {},
  };
}

export const projectsProjector: Projector<Project, ProjectState> = {
  collection: PROJECTS_COLLECTION,
  typePrefixes: ['project.', 'rival.', 'followers.', 'dossier.', 'onchain.', 'calltracker.'],
  keyOf: (event) => (event.data as { projectId?: string }).projectId ?? null,
  fold: foldProject,
  // The board's past: every write of a public project (a pending one is on no board).
  versioned: (facet) => facet === PROJECT_FACETS.dossier || facet === PROJECT_FACETS.noDossier,
  // Half a version's text, and left as it was by nine writes in ten.
  sharedMember: 'dossier',
};
