/** The MongoDB store's counter arithmetic (its commit path needs a server; this part does not). */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import { facetDeltas } from '../../readmodels/mongodb/mongodb-read-store.ts';

it('a batch moves each facet count by the documents that entered or left it', () => {
  const before = new Map([
    ['a', 'pending'],
    ['b', 'dossier'],
  ]);
  const rows = [
    { _id: 'a', facet: 'dossier' },
    { _id: 'b', facet: 'dossier' },
    { _id: 'c', facet: 'no_dossier' },
    { _id: 'c', facet: 'dossier' },
    { _id: 'd', facet: 'pending' },
    { _id: 'd', facet: 'pending' },
  ];
  assert.deepEqual(Object.fromEntries(facetDeltas(before, rows)), { dossier: 2 });
});

it('a document that leaves a facet and comes back in one batch changes nothing', () => {
  const deltas = facetDeltas(new Map([['a', 'dossier']]), [
    { _id: 'a', facet: 'pending' },
    { _id: 'a', facet: 'dossier' },
  ]);
  assert.equal(deltas.size, 0);
});
