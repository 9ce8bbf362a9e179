import { keptBody, type JsonBody } from './json-body.ts';

/**
 * A bounded cache of rendered response bodies (head and tail bytes around `readAt`, with their
 * validator), for reads whose bytes depend only on the read model and the normalized query, never
 * on the caller. Every entry belongs to one version of the read model it was read from (the serving
 * generation and the collection's checkpoint): the first request that sees a newer version drops
 * every entry, so an entry is served only while the checkpoint it was read at is still the current
 * one. Requests still holding an older version (read just before a commit) neither read nor fill it.
 * Bounded by bytes, a body not asked for since it was kept out first (second chance); a body larger
 * than an eighth of the bound is not kept, and (keepAfterMisses) neither is one asked for only once.
 */
export type BodyCache = {
  /** The kept body, unless `at` (ms since the epoch) is outside the time span it was kept for. */
  get(version: CacheVersion, key: string, at?: number): JsonBody<unknown> | undefined;
  /** `span`: the times (ms since the epoch, `until` excluded) the body holds for, when it depends on the time of the read. */
  set(version: CacheVersion, key: string, body: JsonBody<unknown>, span?: TimeSpan): void;
  stats(): { entries: number; bytes: number; hits: number; misses: number };
};

/** [from, until) in ms since the epoch. */
export type TimeSpan = { from: number; until: number };

/** [generation, checkpoint]: compared in that order. */
export type CacheVersion = readonly [number, number];

export const BODY_CACHE_BYTES_DEFAULT = 24 * 1024 * 1024;

/** Negative, zero or positive as `a` is older than, the same as or newer than `b`. */
export function compareVersions(a: CacheVersion, b: CacheVersion): number {
  return a[0] !== b[0] ? a[0] - b[0] : a[1] - b[1];
}

/**
 * Values kept per key under one version of what they were read from (at most `maxEntries`; past that
 * the kept ones are dropped): a newer version empties it, an older one neither reads nor fills it.
 * The caller reads the version before the data, so nothing is kept under a version older than its data.
 */
export type VersionedMap<V> = {
  get(version: CacheVersion, key: string): V | undefined;
  set(version: CacheVersion, key: string, value: V): void;
};

export function createVersionedMap<V>(maxEntries: number): VersionedMap<V> {
  const entries = new Map<string, V>();
  let version: CacheVersion = [-1, -1];
  /** Whether `seen` is the kept version (a newer one replaces it and empties the map). */
  function current(seen: CacheVersion): boolean {
    const order = compareVersions(seen, version);
    if (order > 0) {
      entries.clear();
      version = seen;
    }
    return order >= 0;
  }
  return {
    get: (seen, key) => (current(seen) ? entries.get(key) : undefined),
    set(seen, key, value) {
      if (!current(seen)) return;
      if (entries.size >= maxEntries) entries.clear();
      entries.set(key, value);
    },
  };
}

/** Keys whose misses are counted at most (past that the counts start again): a bound on the doorkeeper. */
const COUNTED_KEYS_MAX = 10_000;

export type BodyCacheOptions = {
  maxBytes?: number;
  /**
   * A body is kept once its key has missed this many times under the current version (1: at once).
   * 2 keeps what is asked for again and lets a one-off read (a mirror walking the delta) pass.
   */
  keepAfterMisses?: number;
};

export function createBodyCache(options: BodyCacheOptions = {}): BodyCache {
  const maxBytes = options.maxBytes ?? BODY_CACHE_BYTES_DEFAULT;
  const keepAfterMisses = options.keepAfterMisses ?? 1;
  /** In the order kept or last given a second chance; `used`: asked for since then (see `set`). */
  const entries = new Map<
    string,
    { body: JsonBody<unknown>; bytes: number; span: TimeSpan | undefined; used: boolean }
  >();
  /** Misses per key under the current version, while fewer than keepAfterMisses. */
  const missed = new Map<string, number>();
  let version: CacheVersion = [-1, -1];
  let bytes = 0;
  let hits = 0;
  let misses = 0;

  /** Whether `seen` is the current version (a newer one replaces it and empties the cache). */
  function current(seen: CacheVersion): boolean {
    const order = compareVersions(seen, version);
    if (order < 0) return false;
    if (order > 0) {
      entries.clear();
      missed.clear();
      bytes = 0;
      version = [seen[0], seen[1]];
    }
    return true;
  }

  function countMiss(key: string): void {
    if (keepAfterMisses <= 1) return;
    if (missed.size >= COUNTED_KEYS_MAX) missed.clear();
    missed.set(key, (missed.get(key) ?? 0) + 1);
  }

  return {
    get(seen, key, at) {
      if (!current(seen)) return undefined;
      let entry = entries.get(key);
      if (entry?.span && !(at !== undefined && at >= entry.span.from && at < entry.span.until)) {
        entries.delete(key);
        bytes -= entry.bytes;
        entry = undefined;
      }
      if (!entry) {
        misses += 1;
        countMiss(key);
        return undefined;
      }
      hits += 1;
      // A flag, not a move to the end: a hit leaves the map as it is (the eviction in `set` moves it).
      entry.used = true;
      return entry.body;
    },
    set(seen, key, body, span) {
      if (!current(seen)) return;
      if (keepAfterMisses > 1) {
        if ((missed.get(key) ?? 0) < keepAfterMisses) return;
        missed.delete(key);
      }
      const size = body.head.length + (body.tail?.length ?? 0) + body.etag.length + key.length * 2 + 64;
      if (size > maxBytes / 8) return;
      const previous = entries.get(key);
      if (previous) {
        entries.delete(key);
        bytes -= previous.bytes;
      }
      entries.set(key, { body: keptBody(body), bytes: size, span, used: false });
      bytes += size;
      // Second chance (the clock algorithm): from the oldest, a body asked for since it was kept or last
      // moved goes to the end with its flag cleared, the first one not asked for goes out. Every moved
      // entry is met again unflagged, so the walk ends.
      for (const [oldest, entry] of entries) {
        if (bytes <= maxBytes) break;
        entries.delete(oldest);
        if (entry.used) {
          entry.used = false;
          entries.set(oldest, entry);
        } else bytes -= entry.bytes;
      }
    },
    stats: () => ({ entries: entries.size, bytes, hits, misses }),
  };
}
