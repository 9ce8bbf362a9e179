import type { Config } from '../../config/config.ts';
import { createInProcessLimiter } from './in-process.ts';
import type { RateLimiter } from './port.ts';

/** Redis when REDIS_URL is set (shared by every instance; its client loaded only then), in-process otherwise. */
export async function createRateLimiter(
  config: Pick<Config, 'REDIS_URL' | 'PULSEBOARD_RATE_LIMIT' | 'PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS'>,
): Promise<RateLimiter> {
  const limit = config.PULSEBOARD_RATE_LIMIT;
  if (!config.REDIS_URL) return createInProcessLimiter({ limit });
  const { createRedisLimiter } = await import('./redis.ts');
  return createRedisLimiter({
    url: config.REDIS_URL,
    limit,
    commandTimeoutMs: config.PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS,
  });
}
