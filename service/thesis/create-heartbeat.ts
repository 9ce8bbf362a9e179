import type { Config } from '../../config/config.ts';
import type { WorkerHeartbeat } from './heartbeat.ts';
import { createInProcessHeartbeat } from './in-process-heartbeat.ts';

/** Redis when REDIS_URL is set (its client loaded only then), else in-process (the embedded default). */
export async function createWorkerHeartbeat(config: Pick<Config, 'REDIS_URL'>): Promise<WorkerHeartbeat> {
  if (!config.REDIS_URL) return createInProcessHeartbeat();
  const { createRedisHeartbeat } = await import('./redis-heartbeat.ts');
  return createRedisHeartbeat({ url: config.REDIS_URL });
}
