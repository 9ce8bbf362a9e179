import type { Timed } from './context.ts';

/**
 * Merges streams that are each in `key` order into one stream in `key` order. Ties go to the
 * earlier stream, so the output is fully determined by the inputs. Holds one item per stream.
 */
export function* mergeByKey(sources: readonly Iterator<Timed>[]): Generator<Timed> {
  const heads: (Timed | null)[] = sources.map((source) => {
    const first = source.next();
    return first.done ? null : first.value;
  });
  for (;;) {
    let best = -1;
    for (let n = 0; n < heads.length; n++) {
      const head = heads[n];
      if (head && (best < 0 || head.key < heads[best]!.key)) best = n;
    }
    if (best < 0) return;
    yield heads[best]!;
    const next = sources[best]!.next();
    heads[best] = next.done ? null : next.value;
  }
}
