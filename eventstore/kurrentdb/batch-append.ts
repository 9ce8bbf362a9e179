import type { AppendResult, AppendedEvent, NewEvent, StreamAppend } from '../port.ts';

/** Streams appended to at once by one batch append. */
const BATCH_STREAMS_IN_FLIGHT = 16;

/**
 * The batch append on KurrentDB, which has no transaction across streams: each stream's groups are
 * joined into one append (one idempotency read and one write per stream per batch, atomic for that
 * stream, so every group stays all or nothing), and up to 16 streams are appended concurrently.
 * Groups of one stream keep their input order; the global order of different streams may differ
 * from it, as for concurrent sources.
 */
export async function appendGroupsPerStream(
  append: (stream: string, events: readonly NewEvent[]) => Promise<AppendResult>,
  groups: readonly StreamAppend[],
): Promise<AppendedEvent[][]> {
  const byStream = new Map<string, number[]>();
  groups.forEach((group, index) => {
    const indexes = byStream.get(group.stream);
    if (indexes) indexes.push(index);
    else byStream.set(group.stream, [index]);
  });
  const results: AppendedEvent[][] = groups.map(() => []);
  const pending = [...byStream];
  // A shared cursor, not shift(): a batch may hold thousands of streams, and each shift moves the rest.
  let cursor = 0;
  const worker = async (): Promise<void> => {
    for (let next = pending[cursor++]; next; next = pending[cursor++]) {
      const [stream, indexes] = next;
      const result = await append(
        stream,
        indexes.flatMap((index) => groups[index]!.events),
      );
      if (!result.ok) throw new Error(`event log refused an 'any' append to ${stream}: ${result.reason}`);
      let offset = 0;
      for (const index of indexes) {
        const count = groups[index]!.events.length;
        results[index] = result.events.slice(offset, offset + count);
        offset += count;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(BATCH_STREAMS_IN_FLIGHT, pending.length) }, worker));
  return results;
}
