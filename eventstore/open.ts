import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { EventLog, SubscriptionState } from './port.ts';
import { createSqliteEventLog } from './sqlite/sqlite-event-log.ts';

export const EVENT_LOG_FILE = 'events.sqlite';

/** Path of the embedded event log inside the data directory. */
export function embeddedEventLogPath(config: Config): string {
  return join(config.PULSEBOARD_DATA_DIR, EVENT_LOG_FILE);
}

/**
 * Why a command that only reads the log cannot run here: the embedded log it would open does not exist
 * (a mistyped PULSEBOARD_DATA_DIR would otherwise be created empty and read as an empty archive).
 */
export function absentEmbeddedLog(config: Config): string | null {
  if (config.EVENTSTORE_URL !== undefined || config.POSTGRES_URL !== undefined) return null;
  const path = embeddedEventLogPath(config);
  return existsSync(path) ? null : `no event log at ${path}: set PULSEBOARD_DATA_DIR to a pulseboard data directory`;
}

/**
 * One log line per change of the append subscription's state (KurrentDB's, or PostgreSQL's listening
 * connection) that an operator acts on (it is lost, or back); /readyz reports the state itself
 * (service/health.ts).
 */
function logSubscriptionState(state: SubscriptionState, error?: unknown): void {
  if (state !== 'reconnecting' && state !== 'live') return;
  const cause = error instanceof Error ? { error: error.name, reason: error.message } : {};
  const msg = state === 'live' ? 'event log subscription live' : 'event log subscription lost; reconnecting';
  process.stderr.write(`${JSON.stringify({ level: state === 'live' ? 'info' : 'warn', msg, ...cause })}\n`);
}

/**
 * The event log the configuration selects: KurrentDB when EVENTSTORE_URL is set, PostgreSQL when
 * POSTGRES_URL is, otherwise the embedded SQLite file in the data directory. The KurrentDB client
 * (and its native bridge) and pg are loaded only when selected.
 */
export async function openEventLog(config: Config, options: { sqliteCacheKiB?: number } = {}): Promise<EventLog> {
  if (config.EVENTSTORE_URL !== undefined) {
    const { createKurrentDbEventLog } = await import('./kurrentdb/kurrentdb-event-log.ts');
    return createKurrentDbEventLog(config.EVENTSTORE_URL, { onSubscriptionState: logSubscriptionState });
  }
  if (config.POSTGRES_URL !== undefined) {
    const { createPostgresEventLog } = await import('./postgres/postgres-event-log.ts');
    return createPostgresEventLog(config.POSTGRES_URL, { onSubscriptionState: logSubscriptionState });
  }
  return createSqliteEventLog(
    embeddedEventLogPath(config),
    options.sqliteCacheKiB === undefined ? {} : { cacheKiB: options.sqliteCacheKiB },
  );
}
