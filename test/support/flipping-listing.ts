/**
 * A listing that a writer flips between two states, for tests of what a reader sees while another
 * connection commits: 6,000 documents of facet `a`, of which two stretches (near the front and near
 * the end of the newest-first listing) move to facet `b` in state 1 and back in state 0. Every page
 * a reader gets must be one state's slice with that state's total, whichever commit it overlapped.
 */
import type { DocWrite } from '../../readmodels/port.ts';

export const LISTING_SIZE = 6000;
/** Documents that leave facet `a` in state 1: listing offsets 500-519 and 5000-5019 of state 0. */
const flipped = (i: number): boolean => (i >= 980 && i < 1000) || (i >= 5480 && i < 5500);
const idOf = (i: number) => `p${String(i).padStart(5, '0')}`;

export type ListingState = 0 | 1;

/** The writes that bring every document to `state` (all of them the first time, the flipped ones after). */
export function listingWrites(state: ListingState, seq: number, all = false): DocWrite[] {
  const writes: DocWrite[] = [];
  for (let i = 0; i < LISTING_SIZE; i++) {
    if (!all && !flipped(i)) continue;
    const facet = state === 1 && flipped(i) ? 'b' : 'a';
    writes.push({
      id: idOf(i),
      doc: { i },
      state: {},
      seq,
      writtenAt: '2026-11-01T00:00:00.000Z',
      sortKey: `k${String(i).padStart(5, '0')}`,
      facet,
      keys: {},
    });
  }
  return writes;
}

/** Facet `a`'s total and the ids of its page at `offset` in `state` (newest first: highest key first). */
export function expectedPage(state: ListingState, offset: number, limit: number): { total: number; ids: string[] } {
  const listed: string[] = [];
  for (let i = LISTING_SIZE - 1; i >= 0; i--) if (state === 0 || !flipped(i)) listed.push(idOf(i));
  return { total: listed.length, ids: listed.slice(offset, offset + limit) };
}
