import { vi } from 'vitest';
import type { EventLog, RecordedEvent } from '../../eventstore/port.ts';
import { isPublicProject, projectsProjector, type ProjectState } from '../../projectors/projects.ts';
import { foldEvents } from '../../projectors/runner.ts';
import type { StoredDoc } from '../../readmodels/port.ts';
import type { Project } from '../../readmodels/schemas.ts';
import { day } from './events.ts';
import { appendSeededEvents, readLog } from './seed.ts';

export const testDossier = (n: number) => ({
  name: `Project ${n}`,
  category: 'dex',
  description: `revision ${n}`,
  stage: 'live',
  confidence: 'medium',
  chains: ['base'],
  founders: [],
  backers: [],
  notable: [],
  token: { ticker: 'TOK', contract: `0x${String(n % 1000).padStart(40, '0')}`, chain: 'base' },
  links: { site: `https://p${n}.example`, docs: null, github: null },
  unverified: [],
  onchain: null,
});

/**
 * Writes `rounds` seeded rounds of board history a minute apart on a faked Date (vi.useFakeTimers), each
 * caught up; returns per round an instant between it and the next, and the log's head after it.
 */
export async function appendHistoryRounds(
  stores: { log: EventLog; catchUp(): Promise<unknown> },
  options: { rounds: number; projects: number; steps: number; seed: number; prefix: string },
  afterRound?: (round: number) => Promise<void>,
): Promise<{ after: string; head: number }[]> {
  const points: { after: string; head: number }[] = [];
  for (let round = 0; round < options.rounds; round++) {
    vi.advanceTimersByTime(60_000);
    const { projects, steps } = options;
    await appendBoardHistory(stores.log, {
      projects,
      steps,
      seed: options.seed + round,
      prefix: `${options.prefix}${round}`,
    });
    await stores.catchUp();
    await afterRound?.(round);
    vi.advanceTimersByTime(60_000);
    points.push({ after: new Date(Date.now() - 30_000).toISOString(), head: await stores.log.headPosition() });
  }
  return points;
}

/**
 * Appends a seeded life of a small board: sightings (some dated earlier than the first, which moves a
 * project in board order), dossiers (which move it between facets), calltracker checks, follower
 * observations and events that write nothing public.
 */
export async function appendBoardHistory(
  log: EventLog,
  options: { projects: number; steps: number; seed: number; prefix?: string },
): Promise<void> {
  await appendSeededEvents(log, { ...options, prefix: options.prefix ?? 'b' }, (rand, step, projectId) => {
    const at = day(Math.floor(step / 40), Math.floor(rand() * 24));
    const pick = rand();
    if (pick < 0.5) {
      const fol = Math.floor(rand() * 10_000);
      const handle = rand() < 0.2 ? { handle: `h${Math.floor(rand() * 30)}` } : {};
      return { type: 'project.sighted', data: { projectId, at, fol, ...handle } };
    }
    if (pick < 0.62) return { type: 'dossier.written', data: { projectId, at, dossier: testDossier(step) } };
    if (pick < 0.75) {
      const data = {
        projectId,
        at,
        status: 'matched',
        historyComplete: rand() < 0.5,
        posts: step,
        firstMcap: 10,
        mcap: 20 + step,
      };
      return { type: 'calltracker.checked', data };
    }
    if (pick < 0.85) {
      const data = {
        projectId,
        at,
        voterId: `u${Math.floor(rand() * 40)}`,
        name: 'n',
        avatar: null,
        direction: rand() < 0.5 ? 'up' : 'down',
      };
      return { type: 'vote.cast', data };
    }
    if (pick < 0.93) {
      const value = Math.floor(rand() * 1000);
      return {
        type: 'followers.observed',
        data: { projectId, at, source: 'followerscope', handle: 'x', value, checkedAt: at },
      };
    }
    return { type: 'rival.listed', data: { projectId, at } };
  });
}

/** Every event of the log, in log order. */
export const allEvents = (log: EventLog): Promise<RecordedEvent[]> => readLog(log);

/** The public projects as the live projector had them after position `at` (the reference every history read is checked against). */
export function boardAt(events: readonly RecordedEvent[], at: number): StoredDoc<Project, ProjectState>[] {
  const upTo = events.filter(
    (e) => e.position <= at && projectsProjector.typePrefixes.some((p) => e.type.startsWith(p)),
  );
  const folded = foldEvents(projectsProjector, new Map(), upTo);
  return [...folded.values()]
    .filter((d) => isPublicProject(d))
    .sort((a, b) => (a.sortKey !== b.sortKey ? (a.sortKey < b.sortKey ? 1 : -1) : a.id < b.id ? 1 : -1));
}
