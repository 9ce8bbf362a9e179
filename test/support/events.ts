import type { RecordedEvent } from '../../eventstore/port.ts';

/** Builds recorded events with increasing positions for pure-fold tests. */
export function eventFactory(start = 1) {
  let position = start - 1;
  return (
    type: string,
    data: Record<string, unknown>,
    recordedAt = new Date(Date.UTC(2026, 10, 1) + position * 1000).toISOString(),
  ): RecordedEvent => {
    position += 1;
    return { id: `e${position}`, stream: 's', revision: position, position, type, data, metadata: {}, recordedAt };
  };
}

export const day = (n: number, hours = 0) =>
  new Date(Date.UTC(2026, 9, 1) + n * 86_400_000 + hours * 3_600_000).toISOString();
