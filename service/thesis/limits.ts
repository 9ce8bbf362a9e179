/** Thesis-feed limits, and the choices the API leaves to this module. */
export const THESIS_CACHE_MS = 30 * 60_000;
export const THESIS_KEEP_MS = 24 * 60 * 60_000;
export const THESIS_MEMBER_DAILY_SUBMISSIONS = 20;
export const THESIS_GLOBAL_DAILY_STARTS = 60;
export const THESIS_OPEN_JOBS = 16;

/** After a failed read no new read of that contract starts before this much time (our choice). */
export const THESIS_FAILURE_COOLDOWN_MS = 10 * 60_000;

/**
 * A job left `running` longer than this by a reader that stopped is closed as failed (never
 * retried). Longer than the largest allowed source timeout (PULSEBOARD_THESIS_SOURCE_TIMEOUT_MS ≤ 120 s).
 */
export const THESIS_STUCK_RUNNING_MS = 5 * 60_000;

/** An open-job slot whose request never landed (a POST that stopped half-way) is freed after this. */
export const THESIS_ABANDONED_SLOT_MS = 2 * 60_000;

/** Bounded retries of an optimistic append that lost a race; each loss means another writer won. */
export const THESIS_APPEND_ATTEMPTS = 200;

export function utcDayOf(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** Whole seconds until the next UTC midnight (at least 1): when the daily caps reset. */
export function secondsToUtcMidnight(now: Date): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

export function secondsUntil(when: string, now: Date): number {
  return Math.max(1, Math.ceil((Date.parse(when) - now.getTime()) / 1000));
}
