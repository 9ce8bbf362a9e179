import { v5 as uuidv5 } from 'uuid';
import type { EventLog, RecordedEvent } from '../../eventstore/port.ts';
import { dataOf } from '../../events/catalogue.ts';
import { EVENT_ID_NAMESPACE, commandEventId } from '../../events/ids.ts';
import { thesisEvent, thesisJobsStream } from '../../events/thesis.ts';
import { THESIS_APPEND_ATTEMPTS, THESIS_OPEN_JOBS } from './limits.ts';
import type { SlotResult } from './quota.ts';

/**
 * The open-jobs ledger: at most `cap` jobs between request and result, across every API process.
 * Opening a job appends `thesis.job.opened` with the expected revision of the ledger stream it
 * counted, so two processes can never both take the last slot. The reader closes a job when it
 * has saved or failed it; a POST closes (refunds) a slot it could not use.
 *
 * The ledger is also the reader's queue: the open jobs, oldest first.
 *
 * To keep every read short the ledger lives in epoch streams `thesis-jobs-<n>`. When the current
 * stream is long and no job is open, the next taker appends `thesis.jobs.rotated` (with the
 * expected revision, so nothing can be opened in between) and continues in `thesis-jobs-<n+1>`.
 * Since no job is open at a rotation, a close always lands in the stream its job was opened in.
 */

export type OpenJob = { epoch: number; requestId: string; contract: string; openedAt: string };

type EpochView = { epoch: number; open: OpenJob[]; revision: number | null; rotatedTo: number | null };

export type TakeJobResult = { ok: true; epoch: number } | Extract<SlotResult, { ok: false }>;

export type CloseReason = 'finished' | 'refunded' | 'abandoned';

export type OpenJobsLedger = {
  take(job: { requestId: string; contract: string; at: string }): Promise<TakeJobResult>;
  close(job: { epoch: number; requestId: string }, reason: CloseReason, at: string): Promise<void>;
  /** The open jobs, oldest first. */
  openJobs(): Promise<OpenJob[]>;
};

function foldEpoch(epoch: number, events: readonly RecordedEvent[]): EpochView {
  const open = new Map<string, OpenJob>();
  let rotatedTo: number | null = null;
  for (const event of events) {
    if (event.type === 'thesis.job.opened') {
      const d = dataOf('thesis.job.opened', event.data);
      open.set(d.requestId, { epoch, requestId: d.requestId, contract: d.contract, openedAt: d.at });
    } else if (event.type === 'thesis.job.closed') {
      open.delete(dataOf('thesis.job.closed', event.data).requestId);
    } else if (event.type === 'thesis.jobs.rotated') {
      rotatedTo = dataOf('thesis.jobs.rotated', event.data).next;
    }
  }
  const last = events[events.length - 1];
  return { epoch, open: [...open.values()], revision: last ? last.revision : null, rotatedTo };
}

export function createOpenJobsLedger(
  log: EventLog,
  options: { cap?: number; rotateAfter?: number } = {},
): OpenJobsLedger {
  const cap = options.cap ?? THESIS_OPEN_JOBS;
  const rotateAfter = options.rotateAfter ?? 256;
  let knownEpoch: number | null = null;

  const exists = async (epoch: number) => (await log.streamRevision(thesisJobsStream(epoch))) !== null;

  /** Epoch streams are created in order, so the newest one is found by galloping then bisecting. */
  async function newestExistingEpoch(): Promise<number> {
    if (!(await exists(0))) return 0;
    let low = 0;
    let step = 1;
    while (await exists(low + step)) {
      low += step;
      step *= 2;
    }
    let high = low + step;
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (await exists(middle)) low = middle;
      else high = middle;
    }
    return low;
  }

  async function currentView(): Promise<EpochView> {
    let epoch = knownEpoch ?? (await newestExistingEpoch());
    for (;;) {
      const view = foldEpoch(epoch, await log.readStream(thesisJobsStream(epoch)));
      if (view.rotatedTo === null) {
        knownEpoch = epoch;
        return view;
      }
      epoch = view.rotatedTo;
    }
  }

  return {
    async take(job) {
      for (let attempt = 0; attempt < THESIS_APPEND_ATTEMPTS; attempt++) {
        const view = await currentView();
        if (view.open.length >= cap) return { ok: false, reason: 'full' };
        const stream = thesisJobsStream(view.epoch);
        if (view.open.length === 0 && view.revision !== null && view.revision + 1 >= rotateAfter) {
          const rotated = thesisEvent('thesis.jobs.rotated', { epoch: view.epoch, next: view.epoch + 1, at: job.at });
          await log.append(stream, [{ id: commandEventId(), ...rotated }], view.revision);
          continue;
        }
        const opened = thesisEvent('thesis.job.opened', { epoch: view.epoch, ...job });
        const result = await log.append(stream, [{ id: commandEventId(), ...opened }], view.revision ?? 'no_stream');
        if (result.ok) return { ok: true, epoch: view.epoch };
      }
      return { ok: false, reason: 'contention' };
    },

    async close(job, reason, at) {
      // A close only lowers the count, so it needs no expected revision; its id makes it happen once.
      const id = uuidv5(`thesis.job.closed\u0000${job.requestId}`, EVENT_ID_NAMESPACE);
      const closed = thesisEvent('thesis.job.closed', { epoch: job.epoch, requestId: job.requestId, reason, at });
      await log.append(thesisJobsStream(job.epoch), [{ id, ...closed }]);
    },

    async openJobs() {
      return (await currentView()).open;
    },
  };
}
