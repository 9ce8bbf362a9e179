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
