import type { RecordedEvent } from '../eventstore/port.ts';
import { dataOf } from '../events/catalogue.ts';
import type { Ask } from '../readmodels/schemas.ts';
import type { Entity, Projector } from './projector.ts';

export const ASKS_COLLECTION = 'asks';

/** One document per project: its asks, newest first. `readAt` is added by each read. */
export type StoredAsks = { projectId: string; asks: Ask[] };

/**
 * When each ask was first heard of (the `at` of its first event). An ask created by `ask.updated`
 * alone has no `askedAt`; it is ordered by this time instead, so a rebuild gives the same order.
 */
export type AsksState = { firstSeenAt: Record<string, string> };

const sortTime = (ask: Ask, state: AsksState): number =>
  Date.parse(ask.askedAt ?? state.firstSeenAt[ask.id] ?? '1970-01-01T00:00:00Z');

/** Newest first: by askedAt (or first-event time), then by id, both descending. */
function ordered(asks: Ask[], state: AsksState): Ask[] {
  return [...asks].sort((a, b) => sortTime(b, state) - sortTime(a, state) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

function blankAsk(id: string): Ask {
  return { id, question: null, askedAt: null, status: 'queued', answer: null, answeredAt: null };
}

/**
 * - `ask.asked`: a question (status `queued`).
 * - `research.requested`: a research request, listed as an ask with `question` null and `askedAt`
 *   set, so the id `ask_researcher` returned can be followed in the same list; its progress comes
 *   from `ask.updated` messages carrying that id.
 * - `ask.updated`: status and answer (an absent answer keeps the stored one); `answeredAt` is the
 *   update's `at` when the status is `answered`, and is kept (with the answer) otherwise. An
 *   unknown id creates the ask with `question` and `askedAt` null.
 * A later `ask.asked`/`research.requested` for an ask first seen through an update fills in
 * question and askedAt but keeps the status the updates set.
 */
export function foldAsks(
  current: Entity<StoredAsks, AsksState> | null,
  event: RecordedEvent,
): Entity<StoredAsks, AsksState> | null {
  let projectId: string;
  let askId: string;
  let at: string;
  let apply: (ask: Ask) => void;

  switch (event.type) {
    case 'ask.asked': {
      const d = dataOf('ask.asked', event.data);
      ({ projectId, askId, at } = d);
      apply = (ask) => {
        ask.question = d.question;
        ask.askedAt = d.at;
      };
      break;
    }
    case 'research.requested': {
      const d = dataOf('research.requested', event.data);
      ({ projectId, at } = d);
      askId = d.requestId;
      apply = (ask) => {
        ask.askedAt = d.at;
      };
      break;
    }
    case 'ask.updated': {
      const d = dataOf('ask.updated', event.data);
      ({ projectId, askId, at } = d);
      apply = (ask) => {
        ask.status = d.status;
        if (d.answer !== undefined) ask.answer = d.answer;
        if (d.status === 'answered') ask.answeredAt = d.at;
      };
      break;
    }
    default:
      return current;
  }

  // Copy-on-write: only the ask this event changes is copied (and the first-seen times when it is new).
  const previous = current ? current.doc : { projectId, asks: [] };
  let state: AsksState = current ? current.state : { firstSeenAt: {} };
  const found = previous.asks.find((a) => a.id === askId);
  const ask = found ? { ...found } : blankAsk(askId);
  if (!found) state = { firstSeenAt: { ...state.firstSeenAt, [askId]: at } };
  apply(ask);
  const asks = found ? previous.asks.map((a) => (a === found ? ask : a)) : [...previous.asks, ask];
  const doc: StoredAsks = { ...previous, asks: ordered(asks, state) };
  return { doc, state, sortKey: '', facet: 'asks', keys: {} };
}

export const asksProjector: Projector<StoredAsks, AsksState> = {
  collection: ASKS_COLLECTION,
  typePrefixes: ['ask.', 'research.requested'],
  keyOf: (event) => (event.data as { projectId?: string }).projectId ?? null,
  fold: foldAsks,
};
