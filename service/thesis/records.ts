import type { EventLog } from '../../eventstore/port.ts';
import { streams } from '../../events/streams.ts';
import {
  foldThesisStream,
  THESIS_COLLECTION,
  type ThesisFoldState,
  type ThesisRecord,
} from '../../projectors/thesis.ts';
import type { ReadStore } from '../../readmodels/port.ts';

/** A contract's record as of a stream revision (null: the stream does not exist yet). */
export type CurrentThesisRecord = { record: ThesisRecord | null; revision: number | null };

/**
 * The current record of a contract: the projection when it already reflects the stream's last
 * revision (one small read), else a fold of the stream itself. Decisions taken on it (dedupe,
 * cache hit, start) append with `expected = revision`, so a stale read can never double a job.
 */
export async function readThesisRecord(
  log: EventLog,
  store: ReadStore,
  contract: string,
): Promise<CurrentThesisRecord> {
  const stream = streams.thesis(contract);
  const revision = await log.streamRevision(stream);
  if (revision === null) return { record: null, revision: null };
  const projected = await store.get<ThesisRecord, ThesisFoldState>(THESIS_COLLECTION, contract.toLowerCase());
  if (projected && projected.state.revision === revision) return { record: projected.doc, revision };
  const events = await log.readStream(stream);
  const last = events[events.length - 1];
  return { record: foldThesisStream(events), revision: last ? last.revision : null };
}
