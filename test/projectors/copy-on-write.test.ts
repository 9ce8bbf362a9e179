/**
 * Folds are copy-on-write (the runner no longer clones documents per event): no fold may change the
 * entity it is given or the event it reads. Every input here is deeply frozen, so any write to one
 * throws (modules run in strict mode), over a generated data set that exercises every source type.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import type { Entity } from '../../projectors/projector.ts';
import { projectors } from '../../projectors/registry.ts';
import { generatedLogEvents } from '../support/seed.ts';

function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<string | symbol, unknown>)[key]);
  return Object.freeze(value);
}

describe('folds are copy-on-write', () => {
  it('no projector changes the entity or the event it folds', async () => {
    const events = await generatedLogEvents({
      projects: 60,
      seed: 9,
      calls: 200,
      days: 12,
      hotContractCalls: 5,
      followerProvider: 'followerscope',
    });
    const frozen = events.map((e) => deepFreeze(e));
    let folds = 0;
    for (const projector of projectors) {
      const entities = new Map<string, Entity<unknown, unknown>>();
      for (const event of frozen) {
        if (!projector.typePrefixes.some((prefix) => event.type.startsWith(prefix))) continue;
        const id = projector.keyOf(event);
        if (id === null) continue;
        const next = projector.fold(entities.get(id) ?? null, event);
        folds += 1;
        if (next) entities.set(id, deepFreeze(next));
      }
    }
    assert.ok(folds > events.length / 2, `folded ${folds} events`);
  });
});
