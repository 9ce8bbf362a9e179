import { isKnownChain, normalizeChain, normalizeContract } from '../config/chains.ts';
import type { RecordedEvent } from '../eventstore/port.ts';
import { dataOf } from '../events/catalogue.ts';
import { THESIS_TEXT_MAX, type CallFreshness, type CallRecord, type CallToken } from '../readmodels/schemas.ts';
import type { Entity, Projector } from './projector.ts';

export const CALLS_COLLECTION = 'calls';
/** Per call only its order key, facet and lookup keys: filtered listings pick and order candidates here without reading payloads. */
export const CALL_INDEX_COLLECTION = 'call-index';
export const CALLS_COLLECTOR_COLLECTION = 'calls-collector';
export const COLLECTOR_DOC_ID = 'collector';

/**
 * Only `visible` calls are served. A suppression flips the facet (a restore flips it back);
 * `pending` holds a suppression that arrived before its call was recorded.
 */
export const CALL_FACETS = { visible: 'visible', suppressed: 'suppressed', pending: 'pending' } as const;

/** Lookup keys of the call index (values from `callKeyValues`). */
export const CALL_KEYS = { contract: 'contract', chainContract: 'chainContract' } as const;

/** A stored call: the record without the tokens' `project`, which is linked at read time. */
export type StoredCallToken = Omit<CallToken, 'project'>;
export type StoredCall = Omit<CallRecord, 'tokens'> & { tokens: StoredCallToken[] };

export type CallState = { suppressed: boolean };
export type CallEntity = Entity<StoredCall | null, CallState>;

/**
 * The canonical chain of a call token: its `chain` when the chain table knows it, else its `key`
 * when that is a known chain key (e.g. chain "Ethereum Mainnet", key "eth"), else the chain as given.
 */
export function tokenChain(token: Pick<StoredCallToken, 'chain' | 'key'>): string {
  if (isKnownChain(token.chain)) return normalizeChain(token.chain);
  if (isKnownChain(token.key)) return normalizeChain(token.key);
  return normalizeChain(token.chain);
}

/** `<chain>:<contract>`, the form the projects and calls `chainContract` keys use. */
export const chainContractKey = (chain: string, contract: string) =>
  `${normalizeChain(chain)}:${normalizeContract(contract)}`;

/** The call's index entries: every token's contract (chain-qualified tokens only) and chain:contract. */
export function callKeyValues(call: { tokens: readonly StoredCallToken[] }): Record<string, string[]> {
  const contracts = new Set<string>();
  const chainContracts = new Set<string>();
  for (const token of call.tokens) {
    const chain = tokenChain(token);
    const contract = normalizeContract(token.contract);
    if (chain === '' || contract === '') continue;
    contracts.add(contract);
    chainContracts.add(`${chain}:${contract}`);
  }
  return { [CALL_KEYS.contract]: [...contracts].sort(), [CALL_KEYS.chainContract]: [...chainContracts].sort() };
}

/**
 * A text over the 12,000-character limit is cut and ends with an explicit note naming `sourceUrl`
 * (docs/source-messages.md). Lengths are UTF-16 code units (what zod and JSON Schema `maxLength` bound from above);
 * a cut never splits a surrogate pair.
 */
export function shortenThesis(text: string, sourceUrl: string): string {
  if (text.length <= THESIS_TEXT_MAX) return text;
  const specific = `\n\n[Shortened to fit ${THESIS_TEXT_MAX.toLocaleString('en-US')} characters; the full text is at ${sourceUrl}]`;
  const note =
    specific.length <= 1000 ? specific : '\n\n[Shortened to fit; the full text is at the source URL of this call]';
  let cut = THESIS_TEXT_MAX - note.length;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return text.slice(0, cut) + note;
}

/** Listing order key: createdAt as UTC milliseconds, so offsets and precisions compare as strings. */
export function callSortKey(createdAt: string): string {
  return new Date(createdAt).toISOString();
}

function facetOf(recorded: boolean, state: CallState): string {
  if (!recorded) return CALL_FACETS.pending;
  return state.suppressed ? CALL_FACETS.suppressed : CALL_FACETS.visible;
}

/** Suppression state after an event: suppressed until restored, across edits. */
function suppressionAfter(state: CallState | undefined, event: RecordedEvent): CallState {
  if (event.type === 'call.suppressed') return { suppressed: true };
  if (event.type === 'call.restored') return { suppressed: false };
  return { suppressed: state?.suppressed ?? false };
}

/** The stored record of a `call.recorded` event: an edit replaces the whole record. */
function recordOf(event: RecordedEvent): StoredCall {
  const { at: _at, ...record } = dataOf('call.recorded', event.data);
  return { ...record, thesisText: shortenThesis(record.thesisText, record.sourceUrl) };
}

/** The payload collection: the response-shaped record, read by id. */
export function foldCall(current: CallEntity | null, event: RecordedEvent): CallEntity {
  const doc = event.type === 'call.recorded' ? recordOf(event) : (current?.doc ?? null);
  const state = suppressionAfter(current?.state, event);
  return { doc, state, sortKey: doc ? callSortKey(doc.createdAt) : '', facet: facetOf(doc !== null, state), keys: {} };
}

/** The index entry of a call: no payload; the same order key and facet as the record, and its lookup keys. */
export type CallIndexDoc = { createdAt: string | null };
export type CallIndexEntity = Entity<CallIndexDoc, CallState>;

export function foldCallIndex(current: CallIndexEntity | null, event: RecordedEvent): CallIndexEntity {
  const state = suppressionAfter(current?.state, event);
  if (event.type === 'call.recorded') {
    const record = dataOf('call.recorded', event.data);
    return {
      doc: { createdAt: record.createdAt },
      state,
      sortKey: callSortKey(record.createdAt),
      facet: facetOf(true, state),
      keys: callKeyValues(record),
    };
  }
  const doc = current?.doc ?? { createdAt: null };
  return {
    doc,
    state,
    sortKey: current?.sortKey ?? '',
    facet: facetOf(doc.createdAt !== null, state),
    keys: current?.keys ?? {},
  };
}

/** Call ids compare case-insensitively (a UUID's hex digits). */
export const callDocId = (callId: string) => callId.toLowerCase();

export const callsProjector: Projector<StoredCall | null, CallState> = {
  collection: CALLS_COLLECTION,
  typePrefixes: ['call.recorded', 'call.suppressed', 'call.restored'],
  keyOf(event) {
    if (event.type === 'call.recorded') return callDocId((event.data as { id: string }).id);
    if (event.type === 'call.suppressed' || event.type === 'call.restored')
      return callDocId((event.data as { callId: string }).callId);
    return null;
  },
  fold: foldCall,
};

export const callIndexProjector: Projector<CallIndexDoc, CallState> = {
  collection: CALL_INDEX_COLLECTION,
  typePrefixes: callsProjector.typePrefixes,
  keyOf: (event) => callsProjector.keyOf(event),
  fold: foldCallIndex,
};

export const EMPTY_FRESHNESS: CallFreshness = { checkedAt: null, completeAt: null, lastAttemptComplete: null };

/** `at` of the collector report the document shows; an older report arriving late does not win. */
export type CollectorState = { at: string };

export function foldCollector(
  current: Entity<CallFreshness, CollectorState> | null,
  event: RecordedEvent,
): Entity<CallFreshness, CollectorState> | null {
  if (event.type !== 'calls.collected') return current;
  const { at, ...freshness } = dataOf('calls.collected', event.data);
  if (current && Date.parse(current.state.at) > Date.parse(at)) return current;
  return { doc: freshness, state: { at }, sortKey: '', facet: 'collector', keys: {} };
}

export const callsCollectorProjector: Projector<CallFreshness, CollectorState> = {
  collection: CALLS_COLLECTOR_COLLECTION,
  typePrefixes: ['calls.collected'],
  keyOf: (event) => (event.type === 'calls.collected' ? COLLECTOR_DOC_ID : null),
  fold: foldCollector,
};
