import type { SourcePayload } from '../../events/source.ts';
import { calltrackerStatusSchema, researchStateSchema } from '../../readmodels/schemas.ts';
import type { SourceMessage } from '../messages.ts';
import { EPOCH_MS, FIXTURE_CHAINS, HALF_DAY_MS, HOUR_MS, iso, type GenerateContext, type Timed } from './context.ts';
import { randomFor, type Random } from './random.ts';
import {
  BACKERS,
  CATEGORIES,
  CHAINS,
  CONFIDENCES,
  STAGES,
  contractFor,
  projectName,
  prose,
  shortLine,
  tld,
  type Chain,
} from './vocabulary.ts';

/**
 * Projects: a pure function of (seed, index) describes each one, and a pure function of
 * (seed, index, half-day) gives its messages in that half-day, so nothing is remembered between
 * messages. Features are assigned by index arithmetic rather than by chance, so every rule is
 * present for every seed once there are MIN_PROJECTS projects.
 */

type Kind = 'x' | 'website' | 'contract';
type Identity = NonNullable<SourcePayload<'project.sighted'>['identity']>;
type Dossier = SourcePayload<'dossier.written'>['dossier'];
type Onchain = SourcePayload<'onchain.checked'>['onchain'];
type Token = NonNullable<Dossier['token']>;

/** Indices with a fixed role (the claimer of the abandoned handle is the last project). */
export const FIXTURE = {
  abandonsHandle: 0,
  manyVoters: 1,
  sharedContractA: 2,
  sharedContractB: 3,
  sharedHostA: 4,
  sharedHostB: 5,
  doubleIdentity: 6,
  doubleToken: 7,
  hotContract: 8,
  followersAhead: 9,
} as const;

export const MANY_VOTERS_UP = 25;
const VOTER_POOL = 60;
const SLOTS_PER_HALF = 32;

export type ProjectProfile = {
  index: number;
  id: string;
  name: string;
  slug: string;
  kind: Kind;
  /** As first sent: sometimes with a leading @ or in other case, as upstreams do. */
  handle: string | null;
  website: string | null;
  chain: Chain | null;
  contract: string | null;
  introHalf: number;
  cadence: number;
  folBase: number;
  folGrowth: number;
  dossier: { half: number; token: Token | null; withOnchain: boolean } | null;
  calltracker: boolean;
  followers: boolean;
  rival: 'before' | 'after' | 'twice' | null;
  votes: boolean;
  research: boolean;
  asks: boolean;
  late: boolean;
  onchainWithoutDossier: boolean;
  abandon: { half: number; newHandle: string } | null;
};

export function projectId(seed: number, index: number): string {
  return `prj-s${seed}-${String(index).padStart(6, '0')}`;
}

function abandonedHandle(seed: number): string {
  return `keeper_s${seed}`;
}

function websiteFor(index: number, host: string): string {
  switch ((index >> 2) % 4) {
    case 0:
      return `https://www.${host}/`;
    case 1:
      return `https://${host}`;
    case 2:
      return host;
    default:
      return `http://www.${host}/about`;
  }
}

function kindOf(index: number): Kind {
  const sel = index % 4;
  return sel === 2 ? 'website' : sel === 3 ? 'contract' : 'x';
}

export function projectProfile(ctx: GenerateContext, index: number): ProjectProfile {
  const { seed } = ctx;
  const r = randomFor(seed, 'project', index);
  const { name, slug } = projectName(r);
  const ownTld = tld(r);
  let kind = kindOf(index);
  const plainHandle = `${slug}_${index}`;
  const handleStyle = index % 10;
  let handle: string | null =
    kind === 'x' || index % 3 !== 0
      ? handleStyle === 1
        ? `@${plainHandle}`
        : handleStyle === 5
          ? plainHandle.toUpperCase()
          : plainHandle
      : null;
  let website: string | null =
    kind === 'website' || (kind === 'contract' && index % 5 === 0)
      ? websiteFor(index, `${slug}${index}.${ownTld}`)
      : null;
  let chain: Chain | null = kind === 'contract' ? CHAINS[(index >> 2) % CHAINS.length]! : null;
  let contract: string | null = chain ? contractFor(chain, r) : null;

  const claimer = ctx.projects - 1;
  const sharedHost = `shared-host-s${seed}.io`;
  switch (index) {
    case FIXTURE.abandonsHandle:
      kind = 'x';
      handle = abandonedHandle(seed);
      break;
    case FIXTURE.sharedContractA:
    case FIXTURE.sharedContractB:
      kind = 'contract';
      chain = index === FIXTURE.sharedContractA ? FIXTURE_CHAINS.sharedA : FIXTURE_CHAINS.sharedB;
      contract = ctx.contracts.shared;
      break;
    case FIXTURE.sharedHostA:
      kind = 'website';
      website = `https://www.${sharedHost}/`;
      break;
    case FIXTURE.sharedHostB:
      kind = 'website';
      website = `https://${sharedHost}/team`;
      break;
    case FIXTURE.doubleIdentity:
      kind = 'contract';
      chain = FIXTURE_CHAINS.double;
      contract = ctx.contracts.double;
      break;
    case FIXTURE.hotContract:
      kind = 'contract';
      chain = FIXTURE_CHAINS.hot;
      contract = ctx.contracts.hot;
      break;
    case FIXTURE.followersAhead:
      kind = 'x';
      handle = plainHandle;
      break;
    case claimer:
      // Claims, in other case and with an @, the handle project 0 abandoned.
      kind = 'x';
      handle = `@${abandonedHandle(seed).toUpperCase()}`;
      break;
  }
  if (kind === 'x') {
    website = null;
    chain = null;
    contract = null;
  }

  const introHalf = Math.floor((index * ctx.introHalves) / ctx.projects);
  const hasDossier = index % 5 === 0 || index % 5 === 2 || index === FIXTURE.doubleToken;
  let token: Token | null = null;
  if (hasDossier) {
    const ticker = slug.slice(0, 4).toUpperCase();
    if (index === FIXTURE.doubleToken) token = { ticker, contract: ctx.contracts.double, chain: FIXTURE_CHAINS.double };
    else if (contract && chain) token = { ticker, contract, chain };
    else if (index % 3 === 0) {
      const tokenChain = CHAINS[index % CHAINS.length]!;
      token = { ticker, contract: contractFor(tokenChain, r), chain: tokenChain };
    } else if (index % 3 === 1) token = { ticker, contract: null, chain: null };
  }

  return {
    index,
    id: projectId(seed, index),
    name,
    slug,
    kind,
    handle,
    website,
    chain,
    contract,
    introHalf,
    cadence: [1, 2, 2, 4, 6][index % 5]!,
    folBase: r.int(20, 40_000),
    folGrowth: r.int(-20, 300),
    dossier: hasDossier ? { half: introHalf + 1 + (index % 3), token, withOnchain: index % 10 !== 2 } : null,
    calltracker: index % 2 === 1,
    followers: (index % 4 === 1 || index === FIXTURE.followersAhead) && handle !== null,
    rival: index % 6 === 0 ? 'before' : index % 12 === 3 ? 'twice' : index % 6 === 3 ? 'after' : null,
    votes: index % 5 === 1,
    research: index % 3 === 2,
    asks: index % 7 === 4,
    late: index % 7 === 3,
    onchainWithoutDossier: !hasDossier && index % 11 === 4,
    abandon:
      index === FIXTURE.abandonsHandle ? { half: introHalf + 2, newHandle: `${abandonedHandle(seed)}_moved` } : null,
  };
}

function bare(handle: string): string {
  return handle.replace(/^@+/, '');
}

function identityOf(p: ProjectProfile, handle: string | null): Identity {
  return {
    kind: p.kind,
    handle: handle === null ? null : bare(handle),
    website: p.website,
    chain: p.chain,
    contract: p.contract,
  };
}

function followers(p: ProjectProfile, ctx: GenerateContext, half: number): number {
  const r = randomFor(ctx.seed, 'fol', p.index, half);
  const wobble = Math.floor(p.folBase / 40);
  return Math.max(0, p.folBase + p.folGrowth * (half - p.introHalf) + r.int(-wobble, wobble));
}

function onchainSnapshot(r: Random, symbol: string | null): Onchain {
  const unknown = r.chance(0.15);
  return {
    symbol,
    mcap: r.int(20_000, 80_000_000),
    holders: r.int(50, 120_000),
    liquidity: unknown ? null : r.int(5_000, 4_000_000),
    change24h: r.int(-6000, 9000) / 10_000,
    buys24h: r.int(0, 9000),
    sells24h: r.int(0, 9000),
    top10Rate: unknown ? null : r.int(500, 9500) / 10_000,
    mintRenounced: unknown ? null : r.chance(0.7),
    lpLocked: unknown ? null : r.chance(0.6),
    honeypot: unknown ? null : r.chance(0.03),
  };
}

function dossierOf(p: ProjectProfile, ctx: GenerateContext, version: number): Dossier {
  const r = randomFor(ctx.seed, 'dossier', p.index, version);
  const token = p.dossier?.token ?? null;
  const chains = [
    ...new Set([token?.chain, p.chain, r.pick(CHAINS)].filter((c): c is string => typeof c === 'string')),
  ];
  const founders = Array.from({ length: r.int(0, 3) }, (_, n) => ({
    name: r.chance(0.8) ? `Founder ${n + 1} of ${p.name}` : null,
    handle: r.chance(0.6) ? `${p.slug}_founder${n + 1}` : null,
    note: r.chance(0.5) ? shortLine(r) : null,
  }));
  return {
    name: p.name,
    category: r.pick(CATEGORIES),
    description: prose(r, r.int(120, 600)),
    stage: r.pick(STAGES),
    confidence: r.pick(CONFIDENCES),
    chains,
    founders,
    backers: Array.from({ length: r.int(0, 3) }, () => r.pick(BACKERS)).filter((b, n, all) => all.indexOf(b) === n),
    notable: Array.from({ length: r.int(0, 2) }, () => shortLine(r)),
    token,
    links: {
      site: p.website === null ? null : p.website.includes('://') ? p.website : `https://${p.website}`,
      docs: r.chance(0.5) ? `https://docs.${p.slug}${p.index}.example/` : null,
      github: r.chance(0.4) ? `https://github.com/${p.slug}${p.index}` : null,
    },
    unverified: Array.from({ length: r.int(0, 2) }, () => shortLine(r)),
    onchain: p.dossier?.withOnchain ? onchainSnapshot(r, token?.ticker ?? null) : null,
  };
}

const RESEARCH_STATES = researchStateSchema.options;
const CALLTRACKER_STATUSES = calltrackerStatusSchema.options;

/** The ordinary voting project's history: flips (same voter, other side) and withdrawals (none). */
const VOTE_SCRIPT: readonly [number, 'up' | 'down' | 'none'][] = [
  [0, 'up'],
  [1, 'down'],
  [2, 'up'],
  [0, 'down'],
  [1, 'none'],
  [3, 'up'],
  [4, 'down'],
  [2, 'none'],
  [5, 'up'],
  [1, 'up'],
];

/** The crowded project: more than 20 up-voters (the voters list caps at 20), one flip, one withdrawal. */
function manyVotersScript(): [number, 'up' | 'down' | 'none'][] {
  const script: [number, 'up' | 'down' | 'none'][] = [];
  for (let v = 0; v < MANY_VOTERS_UP + 1; v++) script.push([v, 'up']);
  script.push([MANY_VOTERS_UP + 1, 'down'], [MANY_VOTERS_UP + 2, 'down'], [MANY_VOTERS_UP + 3, 'down']);
  script.push([MANY_VOTERS_UP, 'down'], [MANY_VOTERS_UP + 3, 'none']);
  return script;
}
const MANY_VOTERS_SCRIPT = manyVotersScript();

function voter(
  ctx: GenerateContext,
  globalVoter: number,
): { voterId: string; name: string | null; avatar: string | null } {
  const r = randomFor(ctx.seed, 'voter', globalVoter);
  const { slug } = projectName(r);
  return {
    voterId: `voter-s${ctx.seed}-${globalVoter}`,
    name: globalVoter % 9 === 4 ? null : `${slug}${globalVoter}`,
    avatar: globalVoter % 4 === 1 ? null : `https://cdn.pulseboard.example/avatars/${globalVoter}.png`,
  };
}

/** Emits one project's messages of one half-day; `slot` orders them inside the project's time slot. */
export function* projectHalf(ctx: GenerateContext, p: ProjectProfile, half: number): Generator<Timed> {
  if (half < p.introHalf) return;
  const { seed } = ctx;
  const base = `s${seed}-p${p.index}-h${half}`;
  const since = half - p.introHalf;
  let slot = 0;
  const timeOf = (h: number, s: number) =>
    EPOCH_MS +
    h * HALF_DAY_MS +
    Math.floor(
      ((p.index * SLOTS_PER_HALF + Math.min(s, SLOTS_PER_HALF - 1)) * HALF_DAY_MS) / (ctx.projects * SLOTS_PER_HALF),
    );
  const emit = <T extends SourceMessage['type']>(type: T, id: string, data: SourcePayload<T>, at?: number): Timed => {
    const key = timeOf(half, slot);
    slot += 1;
    return { key, message: { type, id, at: iso(at ?? key), data } as SourceMessage };
  };
  const r = randomFor(seed, 'half', p.index, half);
  const projectId = p.id;

  if (since === 0 && p.rival === 'before') yield emit('rival.listed', `${base}-rival`, { projectId });

  const abandoning = p.abandon !== null && half === p.abandon.half;
  const sighted = since === 0 || since % p.cadence === 0 || (p.late && since === 5) || abandoning;
  if (sighted) {
    const hasFollowers = p.handle !== null;
    const fol = hasFollowers ? followers(p, ctx, half) : null;
    if (since === 0) {
      const first: SourcePayload<'project.sighted'> = {
        projectId,
        ...(p.handle !== null || p.index % 2 === 0 ? { handle: p.handle } : {}),
        identity: identityOf(p, p.handle),
        name: p.name,
        pfp: p.index % 6 === 5 ? null : `https://cdn.pulseboard.example/pfp/${p.slug}-${p.index}.png`,
        fol,
        why: shortLine(r),
        bio: p.index % 8 === 7 ? null : shortLine(r),
      };
      yield emit('project.sighted', `${base}-sighted`, first);
    } else if (abandoning && p.abandon) {
      yield emit('project.sighted', `${base}-sighted`, {
        projectId,
        handle: p.abandon.newHandle,
        identity: identityOf(p, p.abandon.newHandle),
        fol,
      });
    } else {
      const refresh: SourcePayload<'project.sighted'> = { projectId, fol };
      // Now and then a re-sighting also carries new text, or clears the bio.
      if (since % 10 === 0) refresh.bio = p.index % 9 === 0 ? null : shortLine(r);
      if (since % 14 === 0) refresh.name = `${p.name} ${r.pick(['v2', 'Reborn', 'Classic'])}`;
      yield emit('project.sighted', `${base}-sighted`, refresh);
    }
  }

  if (p.late && since === 6) {
    // Arrives after the sighting of half intro+5 but was observed in half intro+3: it may only feed history.
    const observed = timeOf(p.introHalf + 3, SLOTS_PER_HALF - 1);
    const fol = p.handle !== null ? followers(p, ctx, p.introHalf + 3) : null;
    yield emit('project.sighted', `${base}-late-sighted`, { projectId, fol }, observed);
  }

  if ((p.rival === 'after' || p.rival === 'twice') && since === 2)
    yield emit('rival.listed', `${base}-rival`, { projectId });
  if (p.rival === 'twice' && since === 8) yield emit('rival.listed', `${base}-rival-again`, { projectId });

  if (p.followers && p.handle !== null && since % 4 === 1) {
    const at = timeOf(half, slot);
    const ahead = p.index === FIXTURE.followersAhead && since === 1;
    const checkedAt = ahead ? at + 3 * HOUR_MS : at - r.int(5, 120) * 60_000;
    yield emit('followers.observed', `${base}-followers`, {
      projectId,
      source: ctx.followerProvider,
      handle: p.handle,
      value: Math.max(0, followers(p, ctx, half) + r.int(-50, 50)),
      checkedAt: iso(checkedAt),
    });
  }

  if (p.dossier && (half === p.dossier.half || (p.index % 10 === 0 && half === p.dossier.half + 12))) {
    const version = half === p.dossier.half ? 0 : 1;
    yield emit('dossier.written', `${base}-dossier`, { projectId, dossier: dossierOf(p, ctx, version) });
    yield emit('research.updated', `${base}-research-ready`, { projectId, state: 'ready', nextEligibleAt: null });
  }

  if (p.research && since >= 1 && since <= 5 && since % 2 === 1) {
    const step = (since - 1) / 2;
    const state = RESEARCH_STATES[(3 * Math.floor(p.index / 3) + step) % RESEARCH_STATES.length]!;
    const waits = state === 'budget_wait' || state === 'paused' || state === 'failed' || state === 'awaiting_admission';
    const data: SourcePayload<'research.updated'> = { projectId, state };
    if (waits) data.nextEligibleAt = iso(timeOf(half, slot) + 24 * HOUR_MS);
    else if (state === 'ready') data.nextEligibleAt = null;
    yield emit('research.updated', `${base}-research`, data);
  }

  const onchainDue =
    (p.dossier?.token?.contract && half > p.dossier.half && (half - p.dossier.half) % 6 === 2) ||
    (p.onchainWithoutDossier && since === 3);
  if (onchainDue) {
    yield emit('onchain.checked', `${base}-onchain`, {
      projectId,
      onchain: onchainSnapshot(r, p.dossier?.token?.ticker ?? null),
    });
  }

  if (p.calltracker && since >= 2 && (since - 2) % 8 === 0) {
    const check = (since - 2) / 8;
    const status = CALLTRACKER_STATUSES[(p.index + check) % CALLTRACKER_STATUSES.length]!;
    const historyComplete = ((p.index >> 1) + check) % 2 === 0;
    const posts = status === 'matched' ? r.int(1, 40) : status === 'checked_no_match' ? 0 : null;
    const at = timeOf(half, slot);
    const data: SourcePayload<'calltracker.checked'> = { projectId, status, historyComplete, posts };
    if (status === 'matched') {
      const firstMcap = r.int(10_000, 2_000_000);
      data.firstAt = historyComplete ? iso(at - r.int(2, 60) * 24 * HOUR_MS) : null;
      data.firstMcap = historyComplete ? firstMcap : null;
      data.firstCaller = historyComplete ? `caller_${r.int(1, 400)}` : null;
      data.latestAt = iso(at - r.int(1, 48) * HOUR_MS);
      // Some calls went down: a multiple below 1 must be reported as such.
      data.mcap = r.chance(0.3) ? Math.floor(firstMcap / r.int(2, 5)) : firstMcap * r.int(1, 30);
    } else if (status === 'checked_no_match') {
      data.latestAt = null;
      data.mcap = r.chance(0.5) ? r.int(10_000, 5_000_000) : null;
    }
    yield emit('calltracker.checked', `${base}-calltracker`, data);
  }

  if (p.votes || p.index === FIXTURE.manyVoters) {
    const script = p.index === FIXTURE.manyVoters ? MANY_VOTERS_SCRIPT : VOTE_SCRIPT;
    const perHalf = p.index === FIXTURE.manyVoters ? 3 : 1;
    for (let step = (since - 1) * perHalf; step >= 0 && step < Math.min(since * perHalf, script.length); step++) {
      const [local, direction] = script[step]!;
      const who = voter(ctx, (p.index * 7 + local) % VOTER_POOL);
      yield emit('vote.cast', `${base}-vote-${step}`, { projectId, ...who, direction });
    }
  }

  if (p.asks) {
    const askId = (n: number) => `ask-s${seed}-${p.index}-${n}`;
    if (since === 1) yield emit('ask.updated', `${base}-ask0`, { projectId, askId: askId(0), status: 'queued' });
    if (since === 2) {
      yield emit('ask.updated', `${base}-ask0`, { projectId, askId: askId(0), status: 'researching', answer: null });
      yield emit('ask.updated', `${base}-ask1`, { projectId, askId: askId(1), status: 'queued' });
    }
    if (since === 3) {
      yield emit('ask.updated', `${base}-ask0`, {
        projectId,
        askId: askId(0),
        status: 'answered',
        answer: prose(r, r.int(200, 900)),
      });
    }
    if (since === 4)
      yield emit('ask.updated', `${base}-ask1`, { projectId, askId: askId(1), status: 'failed', answer: null });
  }
}

/** Every project's messages in time order: half-days outermost, projects by index inside each. */
export function* projectMessages(ctx: GenerateContext): Generator<Timed> {
  for (let half = 0; half < ctx.halves; half++) {
    for (let index = 0; index < ctx.projects; index++) {
      // Introduction halves grow with the index: the rest of the projects are not on the board yet.
      if (half < Math.floor((index * ctx.introHalves) / ctx.projects)) break;
      yield* projectHalf(ctx, projectProfile(ctx, index), half);
    }
  }
}
