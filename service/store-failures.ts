import { UnavailableError } from '@kurrent/kurrentdb-client';
import { MongoNetworkError, MongoServerSelectionError } from 'mongodb';

/** node:sqlite primary result codes a retry can outlive: busy, locked, I/O error. */
const SQLITE_RETRYABLE = new Set([5, 6, 10]);
/** Node system error codes of a server that is down or unreachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE']);

/**
 * Whether a store failure is one a retry can outlive (a locked file, a server down or unreachable):
 * told by the error's class or code as each adapter's driver types it, never by its message.
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof UnavailableError
  )
    return true;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number') return SQLITE_RETRYABLE.has(errcode & 0xff);
  return typeof code === 'string' && UNREACHABLE.has(code);
}
