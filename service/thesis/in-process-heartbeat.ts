import { HEARTBEAT_TTL_MS, type WorkerHeartbeat } from './heartbeat.ts';

/** The embedded default's heartbeat: the reader and the feed share this process. */
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
