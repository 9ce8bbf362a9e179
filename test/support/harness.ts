import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.ts';
import { parseConfig, type Config } from '../../config/config.ts';
import { sourceEventId } from '../../events/ids.ts';
import { changeOwner, issueKey, type OwnerChange } from '../../service/access.ts';
import { createRateLimiter } from '../../service/rate/create.ts';
import type { RateGate } from '../../service/rate/gate.ts';
import type { RateLimiter } from '../../service/rate/port.ts';
import type { WorkerHeartbeat } from '../../service/thesis/heartbeat.ts';
import { createServices, type Services } from '../../service/services.ts';
import { assertResponse, matchPath, type CheckedResponse } from './openapi-validator.ts';
import { openStores, type Stores } from '../../service/stores.ts';

export type Harness = {
  dir: string;
  /** What a child process (`pulseboard replay`, …) needs beside PULSEBOARD_DATA_DIR to open the same stores. */
  engineEnv: Record<string, string>;
  config: Config;
  stores: Stores;
  services: Services;
  /** The rate limiter the configuration selected (Redis when REDIS_URL is set). */
  limiter: RateLimiter;
  app: FastifyInstance;
  /** Appends one source event the way ingest stores it (stream, v5 id, data + at). */
  append(type: string, messageId: string, stream: string, data: Record<string, unknown>): Promise<void>;
  key(owner: string, changes?: OwnerChange[]): Promise<string>;
  get(url: string, key?: string): Promise<CheckedResponse>;
  close(): Promise<void>;
};

/**
 * A service on a temporary data directory. The limiter is the real one the configuration selects;
 * the default limit is raised so tests of other concerns are not throttled (set
 * PULSEBOARD_RATE_LIMIT in `env` to test limiting).
 */
export type HarnessOptions = {
  env?: Record<string, string>;
  now?: () => Date;
  gate?: RateGate;
  /** The thesis reader heartbeat the feed consults (tests beat it themselves). */
  heartbeat?: WorkerHeartbeat;
  /** Receives every log line the app writes (Fastify's logger at debug level). */
  logStream?: { write(line: string): void };
  /** The commit watch's poll interval (service/commit-watch.ts); its default when absent. */
  commitPollMs?: number;
  /** How often held requests re-check their keys while idle (KEY_RECHECK_MS when absent). */
  keyRecheckMs?: number;
};

/**
 * The engine the harness runs on: the embedded default, or with PULSEBOARD_TEST_ENGINE=postgres (the
 * `postgres` project of vitest.config.ts) a PostgreSQL database of its own, emptied at close for the next.
 */
async function engineEnv(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (process.env['PULSEBOARD_TEST_ENGINE'] !== 'postgres') return { env: {}, drop: async () => undefined };
  const { reusedDatabase } = await import('./postgres.ts');
  const database = await reusedDatabase('pb_engine');
  return { env: { POSTGRES_URL: database.url }, drop: () => database.drop() };
}

export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-test-'));
  const engine = await engineEnv();
  const parsed = parseConfig({
    PULSEBOARD_DATA_DIR: dir,
    PULSEBOARD_RATE_LIMIT: '1000000',
    ...engine.env,
    ...options.env,
  });
  if (!parsed.ok) throw new Error(parsed.reason);
  const config = parsed.config;
  const stores = await openStores(config);
  const limiter: RateLimiter = await createRateLimiter(config);
  const services = createServices({
    config,
    stores,
    limiter,
    ...(options.now ? { now: options.now } : {}),
    ...(options.gate ? { gate: options.gate } : {}),
    ...(options.heartbeat ? { heartbeat: options.heartbeat } : {}),
    ...(options.commitPollMs === undefined ? {} : { commitPollMs: options.commitPollMs }),
    ...(options.keyRecheckMs === undefined ? {} : { keyRecheckMs: options.keyRecheckMs }),
  });
  const app = buildApp(services, options.logStream ? { logger: { level: 'debug', stream: options.logStream } } : {});
  await app.ready();
  let openapi: Record<string, unknown> | undefined;
  return {
    dir,
    engineEnv: engine.env,
    config,
    stores,
    services,
    limiter,
    app,
    async append(type, messageId, stream, data) {
      const result = await stores.log.append(stream, [
        { id: sourceEventId(type, messageId), type, data, metadata: { source: 'test', messageId } },
      ]);
      if (!result.ok) throw new Error('append failed');
    },
    async key(owner, changes = []) {
      for (const change of changes) await changeOwner(stores, owner, change);
      return (await issueKey(stores, owner)).key;
    },
    async get(url, key) {
      const res = await app.inject({ method: 'GET', url, headers: key ? { authorization: `Bearer ${key}` } : {} });
      // Every /v1 response any test reads is checked against the served OpenAPI document (ajv).
      if (url.startsWith('/v1/') && !url.startsWith('/v1/openapi.json')) {
        openapi ??= JSON.parse((await app.inject({ method: 'GET', url: '/v1/openapi.json' })).body) as Record<
          string,
          unknown
        >;
        const body = JSON.parse(res.body) as unknown;
        // Unknown routes are not in the document; their body must still be the error envelope.
        if (matchPath(openapi, url) !== null) assertResponse(openapi, 'GET', url, res.statusCode, body);
        else assert.deepEqual(Object.keys((body as { error: object }).error ?? {}), ['code', 'message']);
      }
      return { status: res.statusCode, headers: res.headers, body: res.body, json: () => JSON.parse(res.body) };
    },
    async close() {
      await app.close();
      await limiter.close();
      await stores.close();
      await engine.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
