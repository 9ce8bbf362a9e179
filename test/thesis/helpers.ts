import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, type Config } from '../../config/config.ts';
import type { EventLog, RecordedEvent } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { createThesisReader, type ThesisReader } from '../../ingest/thesis-reader/reader.ts';
import type { ThesisSource } from '../../ingest/thesis-reader/source.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { thesisProjector } from '../../projectors/thesis.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { changeOwner, createAccess } from '../../service/access.ts';
import type { Caller } from '../../service/caller.ts';
import { createThesisFeed, type ThesisFeed } from '../../service/thesis/feed.ts';
import type { WorkerHeartbeat } from '../../service/thesis/heartbeat.ts';
import { createInProcessHeartbeat } from '../../service/thesis/in-process-heartbeat.ts';
import type { ThesisLogger } from '../../service/thesis/logger.ts';
import type { ThesisItem } from '../../readmodels/schemas.ts';

export function tempDir(prefix = 'pulseboard-thesis-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export function testConfig(env: Record<string, string> = {}): Config {
  const parsed = parseConfig(env);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.config;
}

/** A clock tests move by hand. */
export function manualClock(startIso: string) {
  let current = Date.parse(startIso);
  return {
    now: () => new Date(current),
    advance(ms: number) {
      current += ms;
    },
    set(iso: string) {
      current = Date.parse(iso);
    },
  };
}

export type LogLine = { level: string; message: string; fields: Record<string, unknown> };

export function capturingLogger(): ThesisLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => {
    lines.push({ level, message, fields });
  };
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

export const contractOf = (n: number): string => `0x${n.toString(16).padStart(40, '0')}`;

export function item(n: number, overrides: Partial<ThesisItem> = {}): ThesisItem {
  return {
    id: `item-${n}`,
    text: `Thesis text number ${n}: SECRET-THESIS-${n}`,
    createdAt: new Date(Date.UTC(2026, 10, 20, 0, n)).toISOString(),
    author: { name: `Author ${n}`, handle: `author${n}`, avatar: null, verified: false },
    trade: { usdValue: 5000, realizedPnlUsd: null, unrealizedPnlUsd: 12.5 },
    ...overrides,
  };
}

/** A source that counts its reads and answers what the test sets. */
export function scriptedSource(answer: (contract: string) => Awaited<ReturnType<ThesisSource['read']>>) {
  const reads: string[] = [];
  const source: ThesisSource = {
    async read(contract) {
      reads.push(contract);
      return answer(contract);
    },
  };
  return { source, reads };
}

export type Harness = {
  log: EventLog;
  store: ReadStore;
  feed: ThesisFeed;
  reader: ThesisReader;
  heartbeat: WorkerHeartbeat;
  clock: ReturnType<typeof manualClock>;
  logger: ReturnType<typeof capturingLogger>;
  config: Config;
  /** Allowlists and links an owner and returns a caller for it. */
  member(owner: string): Promise<Caller>;
  /** Moves the clock and, like a running reader, beats the heartbeat at the new time. */
  tick(ms: number): Promise<void>;
  project(): Promise<number>;
  events(prefix?: string): Promise<RecordedEvent[]>;
  close(): Promise<void>;
};

export async function harness(options: {
  source: ThesisSource;
  env?: Record<string, string>;
  start?: string;
  readerAlive?: boolean;
  dir?: string;
}): Promise<Harness> {
  const dir = options.dir ? null : tempDir();
  const base = options.dir ?? dir!.path;
  const log = createSqliteEventLog(join(base, 'events.sqlite'));
  const store = createSqliteReadStore(join(base, 'readmodels.sqlite'));
  const clock = manualClock(options.start ?? '2026-11-22T10:00:00.000Z');
  const logger = capturingLogger();
  const config = testConfig(options.env ?? {});
  const heartbeat = createInProcessHeartbeat({ now: clock.now });
  if (options.readerAlive !== false) await heartbeat.beat();
  const access = createAccess(store, clock.now);
  const feed = createThesisFeed({ log, store, access, config, heartbeat, now: clock.now, logger });
  const reader = createThesisReader({ log, store, source: options.source, heartbeat, now: clock.now, logger });
  const runner = createProjectorRunner(log, store, thesisProjector);
  return {
    log,
    store,
    feed,
    reader,
    heartbeat,
    clock,
    logger,
    config,
    async member(owner) {
      await changeOwner({ log, store }, owner, 'allow', clock.now());
      await changeOwner({ log, store }, owner, 'link', clock.now());
      return { keyId: `key-${owner}`, owner };
    },
    async tick(ms) {
      clock.advance(ms);
      await heartbeat.beat();
    },
    project: () => runner.catchUp(),
    async events(prefix = 'thesis.') {
      return log.readAll({ afterPosition: 0, typePrefixes: [prefix], limit: 100_000 });
    },
    async close() {
      await store.close();
      await log.close();
      dir?.remove();
    },
  };
}
