import assert from 'node:assert/strict';
import { getHeapStatistics } from 'node:v8';
import { describe, it } from 'vitest';
import { garbageCollector, heapFull } from '../../projectors/runner.ts';

describe('the runner heap guard', () => {
  // The used size counts garbage: only what is left after a full collection may end a batch.
  it('collects first, and ends the batch only when the held documents leave too little room', () => {
    const readings = (...values: number[]) => () => values.shift() ?? Number.NaN;
    let collections = 0;
    const collect = () => () => {
      collections += 1;
    };
    assert.equal(heapFull(1000, readings(900), collect), false);
    assert.equal(collections, 0, 'no collection below the guard');
    assert.equal(heapFull(1000, readings(1500, 600), collect), false, 'garbage: 600 left after the collection');
    assert.equal(collections, 1);
    assert.equal(heapFull(1000, readings(1500, 760), collect), true, 'held: less than a quarter of the guard free after it');
    assert.equal(heapFull(1000, readings(1500, 750), collect), false, 'exactly a quarter free is room enough');
    assert.equal(collections, 3);
    assert.equal(heapFull(1000, readings(1001), () => null), true, 'without a way to collect, the used size decides');
  });

  it('has a full collection at hand in this process, and it frees what nothing holds', () => {
    const collectGarbage = garbageCollector();
    assert.ok(collectGarbage, 'V8 gc could not be exposed');
    let junk: { i: number }[] | null = Array.from({ length: 2_000_000 }, (_, i) => ({ i }));
    const withJunk = getHeapStatistics().used_heap_size;
    assert.equal(junk.length, 2_000_000);
    junk = null;
    collectGarbage();
    assert.ok(getHeapStatistics().used_heap_size < withJunk - 40e6, 'the collection freed the 2,000,000 dropped objects');
  });
});
