import { Redis } from 'ioredis';
import type { Config } from '../../config/config.ts';

/**
 * Whether a thesis reader is running: the reader beats every few seconds, the feed asks
 * `isAlive()` (ThesisStatus.workerAvailable; POST answers 503 when a read would be needed and no
 * reader is alive). In-process for the embedded default; Redis (a key with a TTL) whenever
 * REDIS_URL is set, so API replicas see a reader that runs in its own process.
 */
export type WorkerHeartbeat = {
  beat(): Promise<void>;
  /** False on any doubt (no beat within the TTL, Redis unreachable). */
  isAlive(): Promise<boolean>;
  /** The reader is stopping: isAlive() turns false now instead of when the TTL runs out. */
  end(): Promise<void>;
  close(): Promise<void>;
};

export const HEARTBEAT_TTL_MS = 30_000;
/** Several beats per TTL, so one slow beat does not make the reader look gone. */
export const HEARTBEAT_INTERVAL_MS = 5_000;

export function createInProcessHeartbeat(options: { ttlMs?: number; now?: () => Date } = {}): WorkerHeartbeat {
  const ttlMs = options.ttlMs ?? HEARTBEAT_TTL_MS;
  const now = options.now ?? (() => new Date());
  let lastBeat: number | null = null;
  return {
    async beat() {
      lastBeat = now().getTime();
    },
    async isAlive() {
      return lastBeat !== null && now().getTime() - lastBeat < ttlMs;
    },
    async end() {
      lastBeat = null;
    },
    async close() {},
  };
}

export const DEFAULT_HEARTBEAT_KEY = 'pulseboard:thesis-reader:heartbeat';

/**
 * Fail-fast client options: a down Redis makes `isAlive()` false at once instead of
 * stalling the request behind a reconnect loop.
 */
export function createRedisHeartbeat(options: { url: string; key?: string; ttlMs?: number }): WorkerHeartbeat {
  const key = options.key ?? DEFAULT_HEARTBEAT_KEY;
  const ttlMs = options.ttlMs ?? HEARTBEAT_TTL_MS;
  const client = new Redis(options.url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  });
  // Without a listener ioredis prints every connection error; the callers see failures as results.
  client.on('error', () => {});
  let connecting: Promise<void> | null = null;

  /** Connects on first use; after a failed connect ioredis reconnects by itself in the background. */
  async function connected(): Promise<void> {
    if (client.status === 'wait' && !connecting) {
      connecting = client.connect().finally(() => {
        connecting = null;
      });
    }
    if (connecting) await connecting;
  }

  return {
    async beat() {
      await connected();
      await client.set(key, new Date().toISOString(), 'PX', ttlMs);
    },
    async isAlive() {
      try {
        await connected();
        return (await client.exists(key)) === 1;
      } catch {
        return false;
      }
    },
    async end() {
      try {
        await connected();
        await client.del(key);
      } catch {
        // The key expires by itself within the TTL.
      }
    },
    async close() {
      client.disconnect();
    },
  };
}

/** Redis when REDIS_URL is set, else in-process (the embedded default). */
export function createWorkerHeartbeat(config: Pick<Config, 'REDIS_URL'>): WorkerHeartbeat {
  return config.REDIS_URL ? createRedisHeartbeat({ url: config.REDIS_URL }) : createInProcessHeartbeat();
}
