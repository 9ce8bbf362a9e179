/** The MongoDB store's commit arithmetic (its commit path needs a server; this part does not): what a batch moved, and the counts it changes. */
import assert from 'node:assert/strict';
import { it } from 'vitest';
import { facetDeltas } from '../../readmodels/list-chunks.ts';
import { rowMoves } from '../../readmodels/mongodb/mongodb-commit.ts';

const row = (_id: string, facet: string, sortKey = 'k') => ({ _id, facet, sortKey });

it('a batch moves the documents that are new or changed sort key or facet, and each facet count by those that entered or left it', () => {
  const before = [row('a', 'pending'), row('b', 'dossier'), row('e', 'dossier', 'k1')];
  const rows = [
    row('a', 'dossier'),
    row('b', 'dossier'),
    row('c', 'dossier'),
    row('d', 'pending'),
    row('e', 'dossier', 'k2'),
  ];
  const moves = rowMoves(before, rows);
  assert.deepEqual(
    moves.map((move) => [move.to.id, move.from?.facet ?? null, move.to.facet]),
    [
      ['a', 'pending', 'dossier'],
      ['c', null, 'dossier'],
      ['d', null, 'pending'],
      ['e', 'dossier', 'dossier'],
    ],
    'b is unchanged; e moved its sort key only',
  );
  assert.deepEqual(moves.find((move) => move.to.id === 'e')?.from?.key, 'k1');
  assert.deepEqual(
    Object.fromEntries(facetDeltas(moves)),
    { dossier: 2 },
    'a left pending for dossier, c joined dossier, d joined pending',
  );
});

it('moves that cancel out change no count', () => {
  const moves = rowMoves([row('a', 'dossier'), row('b', 'pending')], [row('a', 'pending'), row('b', 'dossier')]);
  assert.equal(moves.length, 2);
  assert.equal(facetDeltas(moves).size, 0);
});
