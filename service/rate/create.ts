import type { Config } from '../../config/config.ts';
import { createInProcessLimiter } from './in-process.ts';
import type { RateLimiter } from './port.ts';
import { createRedisLimiter } from './redis.ts';

/** Redis when REDIS_URL is set (shared by every instance), in-process otherwise. */
export function createRateLimiter(
  config: Pick<Config, 'REDIS_URL' | 'PULSEBOARD_RATE_LIMIT' | 'PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS'>,
): RateLimiter {
  const limit = config.PULSEBOARD_RATE_LIMIT;
  return config.REDIS_URL
    ? createRedisLimiter({ url: config.REDIS_URL, limit, commandTimeoutMs: config.PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS })
    : createInProcessLimiter({ limit });
}
