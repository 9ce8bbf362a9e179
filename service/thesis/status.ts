import type { ThesisRecord } from '../../projectors/thesis.ts';
import type { ThesisStatus } from '../../readmodels/schemas.ts';
import { THESIS_CACHE_MS, THESIS_KEEP_MS } from './limits.ts';

/**
 * ThesisStatus of a stored record at the time of the read (its transitions):
 * - no job → not_requested; a pending job → queued / running;
 * - a saved job → ready for 30 minutes after `fetchedAt`, then stale, then after 24 hours
 *   not_requested with the snapshot (and its outcome) dropped;
 * - a failed job → failed until the next request (no automatic retry).
 * The latest snapshot younger than 24 hours is shown in every state, so a refresh that is queued
 * or that failed still shows what was saved before. `nextEligibleAt` is when a POST can next start
 * a read of this contract: the end of the 30-minute cache or of the failure cooldown; null when it
 * can now (caps permitting) or a job is pending.
 */
export function toThesisStatus(record: ThesisRecord | null, at: { now: Date; workerAvailable: boolean }): ThesisStatus {
  const now = at.now.getTime();
  const checkedAt = at.now.toISOString();
  const base = { workerAvailable: at.workerAvailable, checkedAt };
  if (!record?.job)
    return { status: 'not_requested', snapshot: null, lastOutcome: null, nextEligibleAt: null, ...base };

  const snapshotAge = record.snapshot ? now - Date.parse(record.snapshot.fetchedAt) : Infinity;
  const snapshot = snapshotAge < THESIS_KEEP_MS ? record.snapshot : null;
  const outcomeKept = record.lastOutcomeAt !== null && now - Date.parse(record.lastOutcomeAt) < THESIS_KEEP_MS;
  const lastOutcome = outcomeKept ? record.lastOutcome : null;

  switch (record.job.phase) {
    case 'queued':
    case 'running':
      return { status: record.job.phase, snapshot, lastOutcome, nextEligibleAt: null, ...base };
    case 'failed': {
      const cooling = record.cooldownUntil !== null && Date.parse(record.cooldownUntil) > now;
      return {
        status: 'failed',
        snapshot,
        lastOutcome: record.lastOutcome,
        nextEligibleAt: cooling ? record.cooldownUntil : null,
        ...base,
      };
    }
    case 'saved': {
      if (snapshot === null)
        return { status: 'not_requested', snapshot: null, lastOutcome: null, nextEligibleAt: null, ...base };
      if (snapshotAge < THESIS_CACHE_MS) {
        const cacheEnds = new Date(Date.parse(snapshot.fetchedAt) + THESIS_CACHE_MS).toISOString();
        return { status: 'ready', snapshot, lastOutcome, nextEligibleAt: cacheEnds, ...base };
      }
      return { status: 'stale', snapshot, lastOutcome, nextEligibleAt: null, ...base };
    }
  }
}
