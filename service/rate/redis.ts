import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { RateDecision, RateLimiter } from './port.ts';
import { wholeSeconds } from './window.ts';

/*
 * Why this is written on ioredis rather than taken from @fastify/rate-limit: that plugin counts
 * per Fastify route, so it cannot put MCP tool calls and REST requests into one budget per key,
 * and it has a single failure mode where the service needs two (basic reads go on unlimited,
 * protected operations answer 503). The library does the hard part (connection, reconnection,
 * EVALSHA with EVAL fallback); the rule itself is one Lua script.
 */

export type RedisLimiterOptions = {
  url: string;
  limit: number;
  windowSeconds?: number;
  /** One rate check's wait for Redis (default 250 ms); past it the request is decided as 'unavailable'. */
  commandTimeoutMs?: number;
  /**
   * Milliseconds since the epoch. Unset (production): the script reads the Redis server clock,
   * so every instance sharing the Redis counts against one clock. Tests inject one to step time.
   */
  now?: () => number;
};

export const rateKey = (keyId: string): string => `pb:rate:${keyId}`;

/**
 * The sliding log of window.ts, atomically in one round trip. The key is a sorted set of counted
 * requests (score = ms allowed, member unique per request) that expires a window after its newest
 * entry, so idle keys leave Redis by themselves.
 * KEYS[1] the key; ARGV: limit, window ms, member, now ms ('' = the server clock).
 * Returns {allowed 1|0, remaining, ms until the entry that decides reset / retry-after ages out}.
 */
const CONSUME_LUA = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local windowMs = tonumber(ARGV[2])
local now = tonumber(ARGV[4])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - windowMs)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, ARGV[3])
  redis.call('PEXPIRE', key, windowMs)
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {1, limit - count - 1, tonumber(oldest[2]) + windowMs - now}
end
local freeing = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
return {0, 0, tonumber(freeing[2]) + windowMs - now}
`;

/**
 * After a command times out (Redis accepts connections but does not answer), answer 'unavailable'
 * without asking Redis for this long, so a hung Redis costs one request commandTimeout, not every
 * request. (A command that timed out may still be executed once Redis wakes up: it then counts.)
 */
const TIMEOUT_BACKOFF_MS = 1000;
/** The longest a request waits for the very first connection (connect plus ready check). */
const FIRST_CONNECT_WAIT_MS = 1000;

type ConsumeCommand = {
  pbRateConsume(
    key: string,
    limit: number,
    windowMs: number,
    member: string,
    now: string,
  ): Promise<[number, number, number]>;
};

export type RedisLimiter = RateLimiter & {
  /** The underlying client, for tests that inspect keys. */
  readonly client: Redis;
};

export function createRedisLimiter(options: RedisLimiterOptions): RedisLimiter {
  const windowMs = (options.windowSeconds ?? 60) * 1000;
  const client = new Redis(options.url, {
    // Fail fast: a down or hung Redis must cost a request at most a fraction of a second.
    connectTimeout: 500,
    commandTimeout: options.commandTimeoutMs ?? 250,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // A consume whose caller already got 'unavailable' must not be counted later after a reconnect.
    autoResendUnfulfilledCommands: false,
    // Keep reconnecting in the background for as long as the process runs, so limiting resumes
    // by itself when Redis is back; requests meanwhile get 'unavailable' at once.
    retryStrategy: (attempt) => Math.min(100 * attempt, 2000),
  });
  // Without a listener ioredis reports every failed reconnect as an unhandled error event;
  // the failure is already surfaced as 'unavailable' decisions and a false ping.
  client.on('error', () => {});
  client.defineCommand('pbRateConsume', { numberOfKeys: 1, lua: CONSUME_LUA });
  const command = client as unknown as ConsumeCommand;

  // Requests made while the first connection is being set up wait for it instead of being refused
  // because the service just started; the wait is bounded even if the handshake itself hangs.
  const firstAttempt = new Promise<void>((resolve) => {
    const settle = () => {
      clearTimeout(timer);
      client.off('ready', settle);
      client.off('error', settle);
      client.off('end', settle);
      resolve();
    };
    const timer = setTimeout(settle, FIRST_CONNECT_WAIT_MS);
    timer.unref();
    client.on('ready', settle);
    client.on('error', settle);
    client.on('end', settle);
  });

  const memberPrefix = `${randomBytes(6).toString('base64url')}:`;
  let sequence = 0;
  let skipUntil = 0;

  async function consume(keyId: string, limit = options.limit): Promise<RateDecision> {
    await firstAttempt;
    if (client.status !== 'ready' || Date.now() < skipUntil) return { ok: false, reason: 'unavailable' };
    try {
      sequence += 1;
      const now = options.now ? String(options.now()) : '';
      const [allowed, remaining, ms] = await command.pbRateConsume(
        rateKey(keyId),
        limit,
        windowMs,
        memberPrefix + sequence,
        now,
      );
      const seconds = wholeSeconds(ms);
      if (allowed === 1) return { ok: true, limit, remaining, resetSeconds: seconds };
      return { ok: false, reason: 'limited', limit, remaining: 0, resetSeconds: seconds, retryAfterSeconds: seconds };
    } catch (error) {
      if (error instanceof Error && error.message === 'Command timed out') skipUntil = Date.now() + TIMEOUT_BACKOFF_MS;
      return { ok: false, reason: 'unavailable' };
    }
  }

  return {
    client,
    consume,
    async ping() {
      await firstAttempt;
      if (client.status !== 'ready') return false;
      try {
        return (await client.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async close() {
      const status = client.status;
      if (status === 'end') return;
      if (status !== 'ready' && status !== 'connecting' && status !== 'connect') {
        // Between attempts there is no socket: cancelling the pending reconnect is all there is to do.
        client.disconnect();
        return;
      }
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
      if (status === 'ready') {
        // QUIT lets Redis finish what it was sent; a Redis that stopped answering cannot acknowledge it.
        await client.quit().catch(() => client.disconnect());
      } else {
        client.disconnect();
      }
      // ioredis destroys a socket that does not close within its disconnectTimeout, so this is bounded.
      await ended;
    },
  };
}
