import type { EventLog } from '../../eventstore/port.ts';
import { commandEventId } from '../../events/ids.ts';
import { streams } from '../../events/streams.ts';
import { thesisEvent } from '../../events/thesis.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import {
  THESIS_ITEMS_MAX,
  THESIS_NETWORK_ID,
  THESIS_THRESHOLD,
  thesisSnapshotSchema,
  type ThesisSnapshot,
} from '../../readmodels/schemas.ts';
import { HEARTBEAT_INTERVAL_MS, type WorkerHeartbeat } from '../../service/thesis/heartbeat.ts';
import { createOpenJobsLedger, type OpenJob, type OpenJobsLedger } from '../../service/thesis/jobs.ts';
import {
  THESIS_ABANDONED_SLOT_MS,
  THESIS_FAILURE_COOLDOWN_MS,
  THESIS_STUCK_RUNNING_MS,
} from '../../service/thesis/limits.ts';
import { errorFields, stderrThesisLogger, type ThesisLogger } from '../../service/thesis/logger.ts';
import { readThesisRecord } from '../../service/thesis/records.ts';
import { selectThesisItems } from './select.ts';
import type { ThesisSource, ThesisSourceRead } from './source.ts';

export type ThesisReader = {
  /** Beats the heartbeat and works the queue until the signal aborts; ends the heartbeat on the way out. */
  run(signal: AbortSignal): Promise<void>;
  /** One pass over the open jobs; resolves with how many it moved on (started, finished or closed). */
  runOnce(): Promise<number>;
};

export type ThesisReaderDeps = {
  log: EventLog;
  store: ReadStore;
  source: ThesisSource;
  heartbeat: WorkerHeartbeat;
  now?: () => Date;
  logger?: ThesisLogger;
  /** Tests pass a ledger with a small rotation threshold. */
  ledger?: OpenJobsLedger;
  idleWaitMs?: number;
};

type ReadResult = { kind: 'saved'; snapshot: ThesisSnapshot; outcome: string } | { kind: 'failed'; outcome: string };

/**
 * The thesis reader (in-process in the embedded default, its own process in the
 * distributed one). It takes open jobs from the ledger oldest first, starts each with an
 * expected-revision append (two readers never both start one job), reads the source exactly
 * once, appends the saved snapshot or the failure, and closes the job's slot. A failed job is
 * never retried. It also tidies up after processes that stopped half-way: a slot whose request
 * never landed is freed, and a job left running by a stopped reader is failed.
 */
export function createThesisReader(deps: ThesisReaderDeps): ThesisReader {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger ?? stderrThesisLogger;
  const ledger = deps.ledger ?? createOpenJobsLedger(deps.log);
  const { log, store, source } = deps;

  async function readSource(contract: string): Promise<ReadResult> {
    let read: ThesisSourceRead;
    try {
      read = await source.read(contract);
    } catch (error) {
      logger.error({ contract, ...errorFields(error) }, 'thesis source adapter threw');
      read = { ok: false, outcome: 'source adapter failed unexpectedly' };
    }
    if (!read.ok) return { kind: 'failed', outcome: read.outcome };
    const selected = selectThesisItems(read.items, read.moreAtSource);
    const snapshot = thesisSnapshotSchema.safeParse({
      contract,
      networkId: THESIS_NETWORK_ID,
      fetchedAt: now().toISOString(),
      threshold: THESIS_THRESHOLD,
      limit: THESIS_ITEMS_MAX,
      hasMore: selected.hasMore,
      sourceUrl: read.sourceUrl,
      items: selected.items,
    });
    if (!snapshot.success) {
      const where = snapshot.error.issues[0]?.path.join('.') || '(snapshot)';
      return { kind: 'failed', outcome: `source response could not be saved (at ${where})` };
    }
    const n = selected.items.length;
    const outcome = `saved ${n} item${n === 1 ? '' : 's'} at or above ${THESIS_THRESHOLD} USD${selected.hasMore ? '; more at the source' : ''}`;
    return { kind: 'saved', snapshot: snapshot.data, outcome };
  }

  async function fail(job: OpenJob, outcome: string, expected: number): Promise<boolean> {
    const at = now();
    const nextEligibleAt = new Date(at.getTime() + THESIS_FAILURE_COOLDOWN_MS).toISOString();
    const failed = thesisEvent('thesis.failed', {
      contract: job.contract,
      requestId: job.requestId,
      outcome,
      nextEligibleAt,
      at: at.toISOString(),
    });
    const result = await log.append(streams.thesis(job.contract), [{ id: commandEventId(), ...failed }], expected);
    return result.ok;
  }

  /** Runs one queued job: start, read once, record, close. */
  async function work(job: OpenJob, revision: number): Promise<boolean> {
    const stream = streams.thesis(job.contract);
    const started = thesisEvent('thesis.started', {
      contract: job.contract,
      requestId: job.requestId,
      at: now().toISOString(),
    });
    const start = await log.append(stream, [{ id: commandEventId(), ...started }], revision);
    if (!start.ok) return false; // another reader started it first

    const result = await readSource(job.contract);
    let recorded: boolean;
    if (result.kind === 'saved') {
      const saved = thesisEvent('thesis.saved', {
        contract: job.contract,
        requestId: job.requestId,
        snapshot: result.snapshot,
        outcome: result.outcome,
        at: now().toISOString(),
      });
      recorded = (await log.append(stream, [{ id: commandEventId(), ...saved }], start.revision)).ok;
      if (recorded)
        logger.info(
          {
            contract: job.contract,
            requestId: job.requestId,
            items: result.snapshot.items.length,
            hasMore: result.snapshot.hasMore,
          },
          'thesis snapshot saved',
        );
    } else {
      recorded = await fail(job, result.outcome, start.revision);
      if (recorded)
        logger.warn(
          { contract: job.contract, requestId: job.requestId, outcome: result.outcome },
          'thesis read failed',
        );
    }
    // Not recorded: the job was closed meanwhile (declared stuck elsewhere); its result stands.
    if (!recorded)
      logger.warn(
        { contract: job.contract, requestId: job.requestId },
        'thesis job was settled elsewhere; result discarded',
      );
    await ledger.close(job, 'finished', now().toISOString());
    return true;
  }

  async function handle(job: OpenJob): Promise<boolean> {
    const { record, revision } = await readThesisRecord(log, store, job.contract);
    const current = record?.job;
    const at = now();
    if (!current || current.requestId !== job.requestId || revision === null) {
      // The POST that opened this slot stopped before its request landed (or lost the race for it).
      if (at.getTime() - Date.parse(job.openedAt) < THESIS_ABANDONED_SLOT_MS) return false;
      await ledger.close(job, 'abandoned', at.toISOString());
      logger.warn(
        { contract: job.contract, requestId: job.requestId },
        'thesis job slot freed: its request never landed',
      );
      return true;
    }
    switch (current.phase) {
      case 'queued':
        return work(job, revision);
      case 'running': {
        if (current.startedAt !== null && at.getTime() - Date.parse(current.startedAt) < THESIS_STUCK_RUNNING_MS)
          return false;
        if (await fail(job, 'the reader stopped before the read finished', revision)) {
          logger.warn(
            { contract: job.contract, requestId: job.requestId },
            'thesis job left running by a stopped reader marked failed',
          );
        }
        await ledger.close(job, 'finished', at.toISOString());
        return true;
      }
      case 'saved':
      case 'failed':
        // A reader stopped between recording the result and closing the slot.
        await ledger.close(job, 'finished', at.toISOString());
        return true;
    }
  }

  async function runOnce(): Promise<number> {
    let moved = 0;
    for (const job of await ledger.openJobs()) {
      if (await handle(job)) moved += 1;
    }
    return moved;
  }

  return {
    runOnce,

    async run(signal) {
      // A failing beat is logged when it starts failing and when it works again, not every interval.
      let beatFailing = false;
      const beat = async () => {
        try {
          await deps.heartbeat.beat();
          if (beatFailing) logger.warn({}, 'thesis reader heartbeat works again');
          beatFailing = false;
        } catch (error) {
          if (!beatFailing) logger.warn(errorFields(error), 'thesis reader heartbeat failed');
          beatFailing = true;
        }
      };
      await beat();
      const timer = setInterval(() => void beat(), HEARTBEAT_INTERVAL_MS);
      const idleWaitMs = deps.idleWaitMs ?? 1_000;
      try {
        // A failed pass (a store error) ends the run: the supervisor (service/background.ts) restarts
        // it with backoff and reports it, instead of this loop retrying and logging every second.
        while (!signal.aborted) {
          const head = await log.headPosition();
          const moved = await runOnce();
          if (moved === 0) await log.waitForAppend(head, idleWaitMs, signal);
        }
      } finally {
        clearInterval(timer);
        await deps.heartbeat.end().catch(() => undefined);
      }
    },
  };
}
