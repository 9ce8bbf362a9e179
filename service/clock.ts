/**
 * The time as ISO 8601 text for a read's `readAt`, formatted at most once a millisecond, since every read
 * stamps one. With a given clock (tests, replays) every call asks that clock.
 */
export function isoClock(now?: () => Date): () => string {
  if (now) return () => now().toISOString();
  let stampedAt = Number.NaN;
  let text = '';
  return () => {
    const ms = Date.now();
    if (ms !== stampedAt) {
      stampedAt = ms;
      text = new Date(ms).toISOString();
    }
    return text;
  };
}
