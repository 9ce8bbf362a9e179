import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { EventLog } from '../eventstore/port.ts';
import { createSqliteEventLog } from '../eventstore/sqlite/sqlite-event-log.ts';

export const EVENT_LOG_FILE = 'events.sqlite';

/** Path of the embedded event log inside the data directory. */
export function embeddedEventLogPath(config: Config): string {
  return join(config.PULSEBOARD_DATA_DIR, EVENT_LOG_FILE);
}

/**
 * The event log the configuration selects. Only the embedded SQLite log is wired so far; with
 * EVENTSTORE_URL set this throws rather than silently writing to a local file nobody reads.
 */
export function openEventLog(config: Config): EventLog {
  if (config.EVENTSTORE_URL !== undefined) {
    throw new Error('EVENTSTORE_URL is set, but the KurrentDB event log is not wired into this command yet; unset it to use the embedded log');
  }
  return createSqliteEventLog(embeddedEventLogPath(config));
}
