import { parseParams } from '../requests/params.ts';
import { thesisContractInputSchema } from '../requests/thesis.ts';
import type { Config } from '../../config/config.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { commandEventId } from '../../events/ids.ts';
import { streams } from '../../events/streams.ts';
import { thesisEvent } from '../../events/thesis.ts';
import { foldThesisRecord, type ThesisRecord } from '../../projectors/thesis.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { type ThesisStatus } from '../../readmodels/schemas.ts';
import type { Access } from '../access.ts';
import type { Caller } from '../caller.ts';
import { errors, fail, ok, type Result, type ServiceError } from '../errors.ts';
import { HEARTBEAT_TTL_MS, type WorkerHeartbeat } from './heartbeat.ts';
import { createOpenJobsLedger, type OpenJobsLedger } from './jobs.ts';
import {
  secondsToUtcMidnight,
  secondsUntil,
  THESIS_APPEND_ATTEMPTS,
  THESIS_GLOBAL_DAILY_STARTS,
  THESIS_MEMBER_DAILY_SUBMISSIONS,
  THESIS_OPEN_JOBS,
  utcDayOf,
} from './limits.ts';
import { stderrThesisLogger, type ThesisLogger } from './logger.ts';
import { globalScope, memberScope, releaseDailySlot, takeDailySlot, type DailyQuota } from './quota.ts';
import { readThesisRecord } from './records.ts';
import { toThesisStatus } from './status.ts';

export type { WorkerHeartbeat } from './heartbeat.ts';
export { createInProcessHeartbeat } from './in-process-heartbeat.ts';
export { createWorkerHeartbeat } from './create-heartbeat.ts';

export type ThesisReply = { httpStatus: 200 | 202; status: ThesisStatus };

export type ThesisFeed = {
  /** GET: validates `query` ({contract}); access; feature switch; never reads the source or enqueues. */
  status(caller: Caller, query: unknown): Promise<Result<ThesisStatus>>;
  /** POST: validates `body` (strict {contract}); access; caps; 200 fresh cache hit, 202 queued/running. */
  request(caller: Caller, body: unknown): Promise<Result<ThesisReply>>;
};

export type ThesisFeedDeps = {
  log: EventLog;
  store: ReadStore;
  access: Access;
  config: Pick<Config, 'PULSEBOARD_THESIS_FEED' | 'PULSEBOARD_THESIS_SOURCE_TIMEOUT_MS'>;
  heartbeat: WorkerHeartbeat;
  now?: () => Date;
  logger?: ThesisLogger;
  /** Tests pass a ledger with a small rotation threshold. */
  ledger?: OpenJobsLedger;
};

/** Both the query and the body take exactly `{contract}`; anything else is named in the 400. */
const contractInput = thesisContractInputSchema;

function parseContract(input: unknown, where: 'query' | 'body'): Result<string> {
  if (where === 'body' && (input === null || typeof input !== 'object' || Array.isArray(input))) {
    return fail(errors.badRequest('the body must be a JSON object with one property, contract'));
  }
  const parsed = parseParams(contractInput, input);
  if (parsed.ok) return ok(parsed.value.contract.toLowerCase());
  const hint = parsed.message.startsWith('unknown parameter') ? "; the only parameter is 'contract'" : '';
  return fail(errors.badRequest(`${parsed.message}${hint}`));
}

/**
 * The private thesis feed. GET reads the stored status; POST appends a
 * request within the caps. Every cap is an optimistic append on a quota stream, so API processes
 * sharing one event log can never over-admit. A POST takes, in order, the member's daily slot,
 * a global daily start and an open-job slot, then appends the request with the contract
 * stream's expected revision; a refusal or a lost race at any step hands back what it took.
 * Slots taken by a process that stopped half-way are only lost until the next UTC day (daily
 * quotas) or freed by the reader (open jobs).
 */
export function createThesisFeed(deps: ThesisFeedDeps): ThesisFeed {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger ?? stderrThesisLogger;
  const ledger = deps.ledger ?? createOpenJobsLedger(deps.log);
  const { log, store, access, heartbeat } = deps;

  async function admit(caller: Caller): Promise<ServiceError | null> {
    if (deps.config.PULSEBOARD_THESIS_FEED !== 'on')
      return errors.unavailable('The thesis feed is disabled on this instance.');
    const membership = await access.ownerAccess(caller.owner);
    if (!membership.allowlisted || !membership.linked) {
      return errors.forbidden('The thesis feed is open to linked allowlist members only; this key owner is not one.');
    }
    return null;
  }

  const openJobsRetryAfter = () => Math.max(1, Math.ceil(deps.config.PULSEBOARD_THESIS_SOURCE_TIMEOUT_MS / 1000));
  const busy = () => errors.unavailable('The thesis feed is busy; retry shortly.', 1);

  type Attempt = { kind: 'reply'; reply: ThesisReply } | { kind: 'refused'; error: ServiceError } | { kind: 'raced' };

  /** One try at queuing: slots in a fixed order, then the request itself, undoing on any refusal. */
  async function tryQueue(
    caller: Caller,
    contract: string,
    expected: number | null,
    record: ThesisRecord | null,
  ): Promise<Attempt> {
    const at = now();
    const atIso = at.toISOString();
    const day = utcDayOf(at);
    const requestId = commandEventId();
    const job = { requestId, contract, at: atIso };
    const member: DailyQuota = { scope: memberScope(caller.owner), day, cap: THESIS_MEMBER_DAILY_SUBMISSIONS };
    const global: DailyQuota = { scope: globalScope, day, cap: THESIS_GLOBAL_DAILY_STARTS };

    const memberSlot = await takeDailySlot(log, member, job);
    if (!memberSlot.ok) {
      if (memberSlot.reason === 'contention') return { kind: 'refused', error: busy() };
      return {
        kind: 'refused',
        error: errors.rateLimited(
          secondsToUtcMidnight(at),
          `This member has used its ${THESIS_MEMBER_DAILY_SUBMISSIONS} thesis submissions for the UTC day.`,
        ),
      };
    }
    const globalSlot = await takeDailySlot(log, global, job);
    if (!globalSlot.ok) {
      await releaseDailySlot(log, member, requestId, atIso);
      if (globalSlot.reason === 'contention') return { kind: 'refused', error: busy() };
      return {
        kind: 'refused',
        error: errors.rateLimited(
          secondsToUtcMidnight(at),
          `The ${THESIS_GLOBAL_DAILY_STARTS} thesis reads of the UTC day have all been started.`,
        ),
      };
    }
    const openSlot = await ledger.take(job);
    if (!openSlot.ok) {
      await releaseDailySlot(log, global, requestId, atIso);
      await releaseDailySlot(log, member, requestId, atIso);
      if (openSlot.reason === 'contention') return { kind: 'refused', error: busy() };
      return {
        kind: 'refused',
        error: errors.rateLimited(openJobsRetryAfter(), `All ${THESIS_OPEN_JOBS} thesis job slots are in use.`),
      };
    }

    const requested = thesisEvent('thesis.requested', { contract, requestId, owner: caller.owner, day, at: atIso });
    const appended = await log.append(
      streams.thesis(contract),
      [{ id: commandEventId(), ...requested }],
      expected ?? 'no_stream',
    );
    if (!appended.ok) {
      // Another POST changed this contract first (most likely queued it): hand everything back.
      await ledger.close({ epoch: openSlot.epoch, requestId }, 'refunded', atIso);
      await releaseDailySlot(log, global, requestId, atIso);
      await releaseDailySlot(log, member, requestId, atIso);
      return { kind: 'raced' };
    }
    logger.info({ contract, requestId }, 'thesis read queued');
    const queued = foldThesisRecord(record, requested);
    return {
      kind: 'reply',
      reply: { httpStatus: 202, status: toThesisStatus(queued, { now: at, workerAvailable: true }) },
    };
  }

  return {
    async status(caller, query) {
      const refused = await admit(caller);
      if (refused) return fail(refused);
      const contract = parseContract(query, 'query');
      if (!contract.ok) return contract;
      const { record } = await readThesisRecord(log, store, contract.value);
      return ok(toThesisStatus(record, { now: now(), workerAvailable: await heartbeat.isAlive() }));
    },

    async request(caller, body) {
      const refused = await admit(caller);
      if (refused) return fail(refused);
      const parsed = parseContract(body, 'body');
      if (!parsed.ok) return parsed;
      const contract = parsed.value;

      for (let attempt = 0; attempt < THESIS_APPEND_ATTEMPTS; attempt++) {
        const { record, revision } = await readThesisRecord(log, store, contract);
        const workerAvailable = await heartbeat.isAlive();
        const status = toThesisStatus(record, { now: now(), workerAvailable });
        if (status.status === 'queued' || status.status === 'running') return ok({ httpStatus: 202, status });
        if (status.status === 'ready') return ok({ httpStatus: 200, status });
        if (status.status === 'failed' && status.nextEligibleAt !== null) {
          return fail(
            errors.rateLimited(
              secondsUntil(status.nextEligibleAt, now()),
              'The last read of this contract failed; a new one can start after the cooldown (nextEligibleAt).',
            ),
          );
        }
        if (!workerAvailable) {
          return fail(
            errors.unavailable(
              'The thesis reader is offline, so a new read cannot start now.',
              Math.ceil(HEARTBEAT_TTL_MS / 1000),
            ),
          );
        }
        const outcome = await tryQueue(caller, contract, revision, record);
        if (outcome.kind === 'reply') return ok(outcome.reply);
        if (outcome.kind === 'refused') {
          logger.info(
            { contract, status: outcome.error.status, retryAfter: outcome.error.retryAfter },
            'thesis request refused',
          );
          return fail(outcome.error);
        }
      }
      return fail(busy());
    },
  };
}
