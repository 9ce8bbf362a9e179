/**
 * Which `pg` errors mean "the server is down or unreachable", told by SQLSTATE, never by message.
 * Registered with config/driver-outages.ts when a PostgreSQL adapter loads, so service/store-failures.ts
 * answers them 503 and background loops retry. Node's own socket codes (ECONNREFUSED …) are already
 * told there; a connection that drops mid-query has no code at all and is told by the adapter, which
 * knows its client was lost (postgres-event-log.ts).
 */
import pg from 'pg';
import { recogniseDriverOutages } from '../../config/driver-outages.ts';

/** Besides class 08 (connection exception): admin or crash shutdown, starting up, too many connections. */
const OUTAGE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

export function isPgOutage(error: object): boolean {
  if (!(error instanceof pg.DatabaseError)) return false;
  const code = error.code ?? '';
  return code.startsWith('08') || OUTAGE_STATES.has(code);
}

recogniseDriverOutages(isPgOutage);
