import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.ts';
import { parseConfig, type Config } from '../../config/config.ts';
import { sourceEventId } from '../../events/ids.ts';
import { changeOwner, issueKey, type OwnerChange } from '../../service/access.ts';
import type { Gate } from '../../service/guard.ts';
import { createServices, type Services } from '../../service/services.ts';
import { openStores, type Stores } from '../../service/stores.ts';

export type Harness = {
  dir: string;
  config: Config;
  stores: Stores;
  services: Services;
  app: FastifyInstance;
  /** Appends one source event the way ingest stores it (stream, v5 id, data + at). */
  append(type: string, messageId: string, stream: string, data: Record<string, unknown>): Promise<void>;
  key(owner: string, changes?: OwnerChange[]): Promise<string>;
  get(url: string, key?: string): Promise<{ status: number; headers: Record<string, unknown>; body: string; json: () => any }>;
  close(): Promise<void>;
};

/** Admits every request without counting: for tests of concerns other than rate protection. */
export const admitAll: Gate = { check: async () => ({ ok: true, headers: {} }) };

export async function createHarness(options: { gate?: Gate; env?: Record<string, string>; now?: () => Date } = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-test-'));
  const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir, ...options.env });
  if (!parsed.ok) throw new Error(parsed.reason);
  const config = parsed.config;
  const stores = await openStores(config);
  const services = createServices({ config, stores, gate: options.gate ?? admitAll, ...(options.now ? { now: options.now } : {}) });
  const app = buildApp(services);
  await app.ready();
  return {
    dir,
    config,
    stores,
    services,
    app,
    async append(type, messageId, stream, data) {
      const result = await stores.log.append(stream, [{ id: sourceEventId(type, messageId), type, data, metadata: { source: 'test', messageId } }]);
      if (!result.ok) throw new Error('append failed');
    },
    async key(owner, changes = []) {
      for (const change of changes) await changeOwner(stores.log, owner, change);
      return (await issueKey(stores.log, owner)).key;
    },
    async get(url, key) {
      const res = await app.inject({ method: 'GET', url, headers: key ? { authorization: `Bearer ${key}` } : {} });
      return { status: res.statusCode, headers: res.headers, body: res.body, json: () => JSON.parse(res.body) };
    },
    async close() {
      await app.close();
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
