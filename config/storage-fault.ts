/**
 * A store failure named by its kind, whichever store raised it. Adapters translate their driver's
 * typed codes (SQLite result codes, MongoDB server codes) into this error at their boundary, so the
 * callers that report a failure (ingest's output, the background loops' log line, /readyz) name a
 * full disk as such without knowing any driver.
 */

/**
 * `disk_full`: the store's disk (or quota) has no room for the write; `read_only`: the store refuses
 * writes; `io_error`: the disk failed a read or write; `corrupt`: the file is damaged or not a
 * database; `write_unconfirmed`: the write was not acknowledged as durable (MongoDB's write concern).
 */
export type StorageFaultKind = 'disk_full' | 'read_only' | 'io_error' | 'corrupt' | 'write_unconfirmed';

/** What an operator reads first in the message of each kind. */
const HEADLINES: Record<StorageFaultKind, string> = {
  disk_full: 'disk full',
  read_only: 'store is read-only',
  io_error: 'disk I/O error',
  corrupt: 'store file is damaged',
  write_unconfirmed: 'write not confirmed',
};

/**
 * Its message names the kind first and then what the adapter knows (file, driver's fixed error text);
 * `code` (`STORAGE_DISK_FULL` …) is what a log line that leaves messages out still shows.
 */
export class StorageFaultError extends Error {
  override name = 'StorageFaultError';
  readonly kind: StorageFaultKind;
  readonly code: string;
  /** The message without its headline: what a thread passes on to rebuild the error on the other side. */
  readonly detail: string;

  constructor(kind: StorageFaultKind, detail: string, options: { cause?: unknown } = {}) {
    super(`${HEADLINES[kind]}: ${detail}`, options);
    this.kind = kind;
    this.detail = detail;
    this.code = `STORAGE_${kind.toUpperCase()}`;
  }
}

/** The storage fault an error is, or was caused by (a wrapper may keep it as its cause); null if none. */
export function storageFaultOf(error: unknown): StorageFaultKind | null {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    if (current instanceof StorageFaultError) return current.kind;
  }
  return null;
}
