/** How the KurrentDB client tells a server it cannot reach, and the error that names that server. */
import { UnavailableError } from '@kurrent/kurrentdb-client';
import { recogniseDriverOutages } from '../../config/driver-outages.ts';
import { EventLogUnavailableError, type EventLog } from '../port.ts';

/** gRPC UNAVAILABLE, as the client's typed error or as a raw gRPC status (status 14). */
export function isUnavailable(error: unknown): boolean {
  return (
    error instanceof UnavailableError ||
    (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 14)
  );
}

/** A server down or unreachable: a retry can outlive it (service/store-failures.ts). */
recogniseDriverOutages((error) => error instanceof UnavailableError);

/**
 * The client reports a server it cannot reach as a bare "UnavailableError"; this names the server
 * (without credentials) so an operator reading one line knows what to start.
 */
export function namingTheServer(log: EventLog, connectionString: string): EventLog {
  const where = connectionString.replace(/\/\/[^@/]*@/, '//');
  const translate = (error: unknown): never => {
    if (isUnavailable(error))
      throw new EventLogUnavailableError(`KurrentDB at ${where} does not answer (unavailable)`, { cause: error });
    throw error;
  };
  return {
    archiveId: () => log.archiveId().catch(translate),
    append: (stream, events, expected) => log.append(stream, events, expected).catch(translate),
    appendBatch: (groups) => log.appendBatch(groups).catch(translate),
    readStream: (stream, options) => log.readStream(stream, options).catch(translate),
    streamRevision: (stream) => log.streamRevision(stream).catch(translate),
    readAll: (options) => log.readAll(options).catch(translate),
    headPosition: () => log.headPosition().catch(translate),
    positionBefore: (time) => log.positionBefore(time).catch(translate),
    waitForAppend: (afterPosition, timeoutMs, signal) =>
      log.waitForAppend(afterPosition, timeoutMs, signal).catch(translate),
    subscriptionState: () => log.subscriptionState?.() ?? 'idle',
    close: () => log.close().catch(translate),
  };
}
