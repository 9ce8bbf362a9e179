import type { SourceMessage } from '../messages.ts';
import { randomFor } from './random.ts';

/** Message times start here and move forward through `days` days, whatever the wall clock says. */
export const GENERATE_EPOCH = '2026-10-01T00:00:00.000Z';
export const EPOCH_MS = Date.parse(GENERATE_EPOCH);
export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
/** Projects are visited twice a day, so a sample exactly 24 h older exists for `vel.h24`. */
export const HALF_DAY_MS = 12 * HOUR_MS;

/** The smallest sizes at which every rule of the data set is still present (tests check it there). */
export const MIN_PROJECTS = 30;
export const MIN_DAYS = 8;
export const MIN_CALLS = 60;

export type GenerateOptions = {
  projects: number;
  seed: number;
  calls: number;
  days: number;
  hotContractCalls: number;
  /** `followers.observed.source`; must equal the ingesting instance's PULSEBOARD_FOLLOWER_PROVIDER. */
  followerProvider: string;
};

export type GenerateContext = GenerateOptions & {
  halves: number;
  /** Projects are first sighted during the first 70% of the period, so most have weeks of history. */
  introHalves: number;
  endMs: number;
  contracts: FixtureContracts;
};

/** A message and the time at which it is emitted (its `at`, except for deliberately late sightings). */
export type Timed = { key: number; message: SourceMessage };

/** Contracts the search and link fixtures share between projects (derived from the seed). */
export type FixtureContracts = {
  /** On ethereum in one project and on base in another: a bare-contract search is `chain_required`. */
  shared: string;
  /** On base as one project's identity and another's dossier token: a call token matching two projects. */
  double: string;
  /** On base: the contract every `--hot-contract-calls` call names. */
  hot: string;
};

export const FIXTURE_CHAINS = { sharedA: 'ethereum', sharedB: 'base', double: 'base', hot: 'base' } as const;

export function fixtureContracts(seed: number): FixtureContracts {
  const r = randomFor(seed, 'fixture-contracts');
  return { shared: `0x${r.hex(40)}`, double: `0x${r.hex(40)}`, hot: `0x${r.hex(40)}` };
}

export function createContext(options: GenerateOptions): GenerateContext {
  const halves = options.days * 2;
  return {
    ...options,
    halves,
    introHalves: Math.max(1, Math.floor(halves * 0.7)),
    endMs: EPOCH_MS + options.days * DAY_MS,
    contracts: fixtureContracts(options.seed),
  };
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Default call count: one per project keeps the 300-project sample under 3 MB. */
export function defaultCalls(projects: number): number {
  return Math.max(MIN_CALLS, projects);
}
