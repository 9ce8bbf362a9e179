import {
  MongoBulkWriteError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoWriteConcernError,
} from 'mongodb';
import { recogniseDriverOutages } from '../../config/driver-outages.ts';
import { StorageFaultError, type StorageFaultKind } from '../../config/storage-fault.ts';

/** A server down or unreachable: a retry can outlive it (service/store-failures.ts). */
recogniseDriverOutages((error) => error instanceof MongoNetworkError || error instanceof MongoServerSelectionError);

/**
 * MongoDB server error codes that are storage faults (the server's error_codes.yml): typed by code,
 * never by message text, which differs between versions and hosting services.
 */
const FAULT_OF_CODE: ReadonlyMap<number, StorageFaultKind> = new Map([
  [14031, 'disk_full'], // OutOfDiskSpace
  [64, 'write_unconfirmed'], // WriteConcernFailed
  [100, 'write_unconfirmed'], // UnsatisfiableWriteConcern
]);

/** The codes a server error carries: its own, its bulk write's per-document errors, its write concern error. */
function codesOf(error: MongoServerError): number[] {
  const codes: number[] = [];
  if (typeof error.code === 'number') codes.push(error.code);
  if (error instanceof MongoBulkWriteError) {
    const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : Object.values(error.writeErrors);
    for (const writeError of writeErrors) codes.push(writeError.code);
  }
  const concern = (error as { writeConcernError?: { code?: unknown } }).writeConcernError;
  if (typeof concern?.code === 'number') codes.push(concern.code);
  return codes;
}

/**
 * A MongoDB error that is a storage fault, as a StorageFaultError naming the code (the driver's
 * error kept as its cause); any other error unchanged. A disk-full code wins over a write concern one.
 */
export function namedMongoError(error: unknown): unknown {
  if (!(error instanceof MongoServerError)) return error;
  const kinds = codesOf(error).map((code) => FAULT_OF_CODE.get(code));
  const unconfirmed = error instanceof MongoWriteConcernError ? 'write_unconfirmed' : undefined;
  const kind = kinds.includes('disk_full') ? 'disk_full' : (kinds.find((k) => k !== undefined) ?? unconfirmed);
  if (kind === undefined) return error;
  const name = typeof error.codeName === 'string' ? error.codeName : `code ${String(error.code)}`;
  return new StorageFaultError(kind, `MongoDB read store refused the write (${name})`, { cause: error });
}
