import { z } from 'zod';
import { isoDateTime, thesisContractSchema, thesisSnapshotSchema } from '../readmodels/schemas.ts';

/**
 * Thesis-feed commands and results.
 *
 * Per contract, stream `thesis-<contract>` (streams.thesis): a request, a start, then a saved
 * snapshot or a failure. Appends there use the stream's expected revision, so one pending job per
 * contract is a property of the log, not of a process.
 *
 * Caps live in quota streams whose appends also carry an expected revision:
 * - per UTC day (streams.thesisQuota): `global` counts starts, `member-<owner>` a member's submissions;
 * - the open-jobs ledger (`thesisJobsStream(epoch)`): at most 16 open jobs. The ledger moves to a new
 *   epoch stream only while no job is open, so each ledger read stays short however long the log lives.
 *
 * Snapshot items (thesis text) live only in `thesis.saved`; no other event carries text, and
 * outcomes are short, fixed-vocabulary sentences written by this service.
 */

const requestId = z.uuid();
const contract = thesisContractSchema;
const owner = z.string().min(1).max(100);
const utcDay = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
const outcome = z.string().min(1).max(300);

export const thesisPayloads = {
  'thesis.requested': z.object({ contract, requestId, owner, day: utcDay, at: isoDateTime }).strict(),
  'thesis.started': z.object({ contract, requestId, at: isoDateTime }).strict(),
  'thesis.saved': z.object({ contract, requestId, snapshot: thesisSnapshotSchema, outcome, at: isoDateTime }).strict(),
  'thesis.failed': z.object({ contract, requestId, outcome, nextEligibleAt: isoDateTime, at: isoDateTime }).strict(),
  'thesis.quota.taken': z
    .object({ scope: z.string().min(1), day: utcDay, requestId, contract, at: isoDateTime })
    .strict(),
  'thesis.quota.released': z.object({ scope: z.string().min(1), day: utcDay, requestId, at: isoDateTime }).strict(),
  'thesis.job.opened': z.object({ epoch: z.number().int().min(0), requestId, contract, at: isoDateTime }).strict(),
  'thesis.job.closed': z
    .object({
      epoch: z.number().int().min(0),
      requestId,
      /** finished: saved or failed; refunded: the request was refused after the slot was taken; abandoned: no request ever landed. */
      reason: z.enum(['finished', 'refunded', 'abandoned']),
      at: isoDateTime,
    })
    .strict(),
  'thesis.jobs.rotated': z
    .object({ epoch: z.number().int().min(0), next: z.number().int().min(1), at: isoDateTime })
    .strict(),
} as const;

export type ThesisEventType = keyof typeof thesisPayloads;
export type ThesisEventData<T extends ThesisEventType> = z.infer<(typeof thesisPayloads)[T]>;

/** Event types of the per-contract stream, the ones the thesis projector folds. */
export const THESIS_JOB_EVENT_TYPES = ['thesis.requested', 'thesis.started', 'thesis.saved', 'thesis.failed'] as const;

/** The open-jobs ledger; cannot collide with `thesis-<contract>` since contracts start with 0x. */
export const thesisJobsStream = (epoch: number): string => `thesis-jobs-${epoch}`;

/** Validates a thesis event's data before it is appended; a failure is a bug in this service. */
export function thesisEvent<T extends ThesisEventType>(
  type: T,
  data: ThesisEventData<T>,
): { type: T; data: ThesisEventData<T> } {
  const parsed = thesisPayloads[type].safeParse(data);
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => i.path.join('.') || '(data)').join(', ');
    throw new Error(`invalid ${type} event data at ${where}`);
  }
  return { type, data };
}
