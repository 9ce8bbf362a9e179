import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { EventLog } from './port.ts';
import { createSqliteEventLog } from './sqlite/sqlite-event-log.ts';

export const EVENT_LOG_FILE = 'events.sqlite';

/** Path of the embedded event log inside the data directory. */
export function embeddedEventLogPath(config: Config): string {
  return join(config.PULSEBOARD_DATA_DIR, EVENT_LOG_FILE);
}

/**
 * The event log the configuration selects: the embedded SQLite file by default. With
 * EVENTSTORE_URL set and no adapter wired, this throws rather than silently writing to a local
 * file nobody reads.
 */
export function openEventLog(config: Config): EventLog {
  if (config.EVENTSTORE_URL !== undefined) {
    throw new Error('EVENTSTORE_URL is set, but the KurrentDB event log adapter is not wired in; unset it to use the embedded log');
  }
  return createSqliteEventLog(embeddedEventLogPath(config));
}
