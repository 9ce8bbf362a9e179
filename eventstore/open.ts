import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { EventLog } from './port.ts';
import { createKurrentDbEventLog } from './kurrentdb/kurrentdb-event-log.ts';
import { createSqliteEventLog } from './sqlite/sqlite-event-log.ts';

export const EVENT_LOG_FILE = 'events.sqlite';

/** Path of the embedded event log inside the data directory. */
export function embeddedEventLogPath(config: Config): string {
  return join(config.PULSEBOARD_DATA_DIR, EVENT_LOG_FILE);
}

/**
 * The event log the configuration selects: KurrentDB when EVENTSTORE_URL is set, otherwise the
 * embedded SQLite file in the data directory.
 */
export function openEventLog(config: Config): EventLog {
  if (config.EVENTSTORE_URL !== undefined) return createKurrentDbEventLog(config.EVENTSTORE_URL);
  return createSqliteEventLog(embeddedEventLogPath(config));
}
