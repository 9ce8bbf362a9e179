import { Redis } from 'ioredis';
import { HEARTBEAT_TTL_MS, type WorkerHeartbeat } from './heartbeat.ts';

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
