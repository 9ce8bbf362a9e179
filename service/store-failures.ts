import { isDriverOutage } from '../config/driver-outages.ts';
import { EventLogUnavailableError } from '../eventstore/port.ts';

/** node:sqlite primary result codes a retry can outlive: busy, locked, I/O error. */
const SQLITE_RETRYABLE = new Set([5, 6, 10]);
/** Node system error codes of a server that is down or unreachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE']);

/**
 * Whether a store failure is one a retry can outlive (a locked file, a server down or unreachable):
 * told by the error's class or code as each adapter's driver types it (config/driver-outages.ts),
 * never by its message.
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (error instanceof EventLogUnavailableError || isDriverOutage(error)) return true;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number') return SQLITE_RETRYABLE.has(errcode & 0xff);
  return typeof code === 'string' && UNREACHABLE.has(code);
}
