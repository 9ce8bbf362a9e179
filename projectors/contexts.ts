import type { RecordedEvent } from '../eventstore/port.ts';
import { dataOf } from '../events/catalogue.ts';
import { VOTERS_PER_SIDE, type ProjectContext, type ResearchState } from '../readmodels/schemas.ts';
import type { Entity, Projector } from './projector.ts';

export const CONTEXTS_COLLECTION = 'contexts';

/** The stored context: ProjectContext without `freshness.readAt`, which is the time of each read. */
export type StoredContext = Omit<ProjectContext, 'freshness' | 'voters'> & {
  voters: NonNullable<ProjectContext['voters']>;
  freshness: Omit<ProjectContext['freshness'], 'readAt'>;
};

type StandingVote = {
  direction: 'up' | 'down';
  name: string | null;
  avatar: string | null;
  at: string;
  position: number;
};

/** One standing vote per voter; a withdrawn vote (`none`) removes it. */
export type ContextState = { votes: Record<string, StandingVote> };

export function emptyContext(): StoredContext {
  return {
    votes: { up: 0, down: 0 },
    voters: { up: [], down: [], limitPerSide: VOTERS_PER_SIDE },
    research: { state: 'not_requested' satisfies ResearchState, hasDossier: false, nextEligibleAt: null },
    freshness: { dossierAt: null, ggCheckedAt: null, onchainCheckedAt: null },
  };
}

/** Most recent first: by vote time, then by log position. */
function recentVoters(votes: readonly StandingVote[]): { name: string | null; avatar: string | null }[] {
  return [...votes]
    .sort((a, b) => Date.parse(b.at) - Date.parse(a.at) || b.position - a.position)
    .slice(0, VOTERS_PER_SIDE)
    .map((v) => ({ name: v.name, avatar: v.avatar }));
}

export function foldContext(
  current: Entity<StoredContext, ContextState> | null,
  event: RecordedEvent,
): Entity<StoredContext, ContextState> {
  // Copy-on-write: the nested objects this fold edits are copied; votes only when a vote changes them.
  const doc: StoredContext = current
    ? { ...current.doc, research: { ...current.doc.research }, freshness: { ...current.doc.freshness } }
    : emptyContext();
  let state: ContextState = current ? current.state : { votes: {} };

  switch (event.type) {
    case 'dossier.written':
      doc.research.hasDossier = true;
      doc.freshness.dossierAt = dataOf('dossier.written', event.data).at;
      break;
    case 'onchain.checked':
      doc.freshness.onchainCheckedAt = dataOf('onchain.checked', event.data).at;
      break;
    case 'calltracker.checked':
      doc.freshness.ggCheckedAt = dataOf('calltracker.checked', event.data).at;
      break;
    case 'research.updated': {
      const d = dataOf('research.updated', event.data);
      doc.research.state = d.state;
      if (d.nextEligibleAt !== undefined) doc.research.nextEligibleAt = d.nextEligibleAt;
      break;
    }
    case 'vote.cast': {
      const d = dataOf('vote.cast', event.data);
      state = { votes: { ...state.votes } };
      if (d.direction === 'none') delete state.votes[d.voterId];
      else
        state.votes[d.voterId] = {
          direction: d.direction,
          name: d.name,
          avatar: d.avatar,
          at: d.at,
          position: event.position,
        };
      const standing = Object.values(state.votes);
      const up = standing.filter((v) => v.direction === 'up');
      const down = standing.filter((v) => v.direction === 'down');
      doc.votes = { up: up.length, down: down.length };
      doc.voters = { up: recentVoters(up), down: recentVoters(down), limitPerSide: VOTERS_PER_SIDE };
      break;
    }
    default:
      break;
  }
  return { doc, state, sortKey: '', facet: 'context', keys: {} };
}

export const contextsProjector: Projector<StoredContext, ContextState> = {
  collection: CONTEXTS_COLLECTION,
  typePrefixes: ['dossier.', 'onchain.', 'calltracker.', 'research.updated', 'vote.'],
  keyOf: (event) => (event.data as { projectId?: string }).projectId ?? null,
  fold: foldContext,
};
