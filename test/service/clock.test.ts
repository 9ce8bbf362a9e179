import { afterEach, describe, expect, it, vi } from 'vitest';
import { isoClock } from '../../service/clock.ts';

describe('isoClock', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('asks a given clock on every call', () => {
    const times = ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-06-30T12:00:00.250Z'];
    let call = 0;
    const readAt = isoClock(() => new Date(times[call++]!));
    expect([readAt(), readAt(), readAt()]).toEqual(times);
    expect(call).toBe(3);
  });

  it('formats the system time once a millisecond, and anew when the millisecond changes', () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2026-11-24T05:00:00.001Z'));
    const format = vi.spyOn(Date.prototype, 'toISOString');
    const readAt = isoClock();
    expect(readAt()).toBe('2026-11-24T05:00:00.001Z');
    expect(readAt()).toBe('2026-11-24T05:00:00.001Z');
    expect(format).toHaveBeenCalledTimes(1);
    vi.setSystemTime(new Date('2026-11-24T05:00:00.002Z'));
    expect(readAt()).toBe('2026-11-24T05:00:00.002Z');
    // Back in time (a clock step): the text follows the clock, never a kept one.
    vi.setSystemTime(new Date('2026-11-24T04:59:59.999Z'));
    expect(readAt()).toBe('2026-11-24T04:59:59.999Z');
    expect(format).toHaveBeenCalledTimes(3);
  });
});
