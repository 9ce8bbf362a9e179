import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { EventLog } from '../eventstore/port.ts';
import type { BatchIngestor } from '../ingest/pipeline.ts';
import { THESIS_COLLECTION, THESIS_JOB_PHASES } from '../projectors/thesis.ts';
import type { ReadStore } from '../readmodels/port.ts';
import type { Readiness } from '../service/health.ts';
import type { Admission, Budget, Guard } from '../service/guard.ts';
import { createOpenJobsLedger } from '../service/thesis/jobs.ts';
import { createFixedCounter, createRequestSeries } from './plain-series.ts';

/**
 * The process's Prometheus metrics. Labels are bounded sets chosen by the server (operation ids,
 * known tool names, status codes, fixed words): never a key, a key id, a path as sent, or any text
 * a caller or the thesis source wrote. The per-request series and rate decisions are plain numbers
 * (plain-series.ts); everything that reads a store is read at scrape time only.
 */
const RATE_DECISIONS = ['allowed', 'limited', 'unprotected', 'refused_unavailable'] as const;
export type RateDecisionLabel = (typeof RATE_DECISIONS)[number];
export type IngestOutcomeLabel = 'accepted' | 'duplicate' | 'rejected';

export type Metrics = {
  registry: Registry;
  /** One answered HTTP request (a 304 too): its operation, status and seconds taken. */
  request(operation: string, status: number, seconds: number): void;
  /** A request the HTTP parser refused before it reached a route. */
  rejected(status: number): void;
  rateDecision(decision: RateDecisionLabel): void;
  ingested(outcome: IngestOutcomeLabel): void;
  /** The Prometheus text, after reading the store-backed gauges once. */
  render(): Promise<string>;
};

export type MetricsSources = {
  log: EventLog;
  store: ReadStore;
  /** The projected read models (collections). */
  collections: readonly string[];
  ready: () => Promise<Readiness>;
};

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'pulseboard_' });
  const registers = [registry];

  const requests = createRequestSeries(
    registry,
    {
      name: 'pulseboard_http_requests_total',
      help: 'Answered HTTP requests by operation (MCP: by method and tool) and status.',
    },
    {
      name: 'pulseboard_http_request_duration_seconds',
      help: 'Time from request to the last byte handed to the socket, by operation.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    },
  );
  const rejectedRequests = new Counter({
    name: 'pulseboard_http_rejected_requests_total',
    help: 'Requests the HTTP parser refused before routing, by status.',
    labelNames: ['status'],
    registers,
  });
  const rateDecisions = createFixedCounter(
    registry,
    {
      name: 'pulseboard_rate_limit_decisions_total',
      help: 'Per-key budget decisions: allowed, limited (429), unprotected (limiter down, basic read let through), refused_unavailable (limiter down, protected read refused).',
    },
    'decision',
    RATE_DECISIONS,
  );
  const rateProtection = new Gauge({
    name: 'pulseboard_rate_protection_up',
    help: '1 while the rate limiter answers, 0 while it does not (degraded).',
    registers,
  });
  const ingest = new Counter({
    name: 'pulseboard_ingest_messages_total',
    help: 'Source messages taken by this process, by outcome.',
    labelNames: ['outcome'],
    registers,
  });
  const checkpoint = new Gauge({
    name: 'pulseboard_projector_checkpoint',
    help: 'Event-log position each read model has folded up to.',
    labelNames: ['read_model'],
    registers,
  });
  const lag = new Gauge({
    name: 'pulseboard_projector_lag_events',
    help: 'Event-log head minus the read model checkpoint.',
    labelNames: ['read_model'],
    registers,
  });
  const head = new Gauge({
    name: 'pulseboard_event_log_head',
    help: 'Position of the newest event in the event log.',
    registers,
  });
  const thesisJobs = new Gauge({
    name: 'pulseboard_thesis_jobs',
    help: 'Thesis jobs by state: open (requested, not yet saved or failed, across all processes, from the open-jobs ledger), and the latest job of each contract by phase (queued, running, saved, failed; from the thesis read model).',
    labelNames: ['state'],
    registers,
  });
  const up = new Gauge({
    name: 'pulseboard_store_up',
    help: '1 when the store answered the last scrape, 0 when it did not.',
    labelNames: ['store'],
    registers,
  });
  for (const outcome of ['accepted', 'duplicate', 'rejected']) ingest.labels(outcome).inc(0);

  const ledger = createOpenJobsLedger(sources.log);

  async function readGauges(): Promise<void> {
    const [readiness, headPosition, checkpoints, open, phases] = await Promise.allSettled([
      sources.ready(),
      sources.log.headPosition(),
      Promise.all(sources.collections.map(async (c) => sources.store.checkpoint(c))),
      ledger.openJobs(),
      // Maintained per-facet counters (the thesis facet is the job phase): one row read each, no scan.
      Promise.all(THESIS_JOB_PHASES.map((phase) => sources.store.count(THESIS_COLLECTION, [phase]))),
    ]);
    up.labels('event_log').set(headPosition.status === 'fulfilled' ? 1 : 0);
    up.labels('read_store').set(checkpoints.status === 'fulfilled' ? 1 : 0);
    if (headPosition.status === 'fulfilled') head.set(headPosition.value);
    if (checkpoints.status === 'fulfilled') {
      sources.collections.forEach((collection, i) => {
        const at = checkpoints.value[i]!;
        checkpoint.labels(collection).set(at);
        if (headPosition.status === 'fulfilled') lag.labels(collection).set(Math.max(0, headPosition.value - at));
      });
    }
    if (readiness.status === 'fulfilled') rateProtection.set(readiness.value.checks.rateLimiter === 'degraded' ? 0 : 1);
    if (open.status === 'fulfilled') thesisJobs.labels('open').set(open.value.length);
    if (phases.status === 'fulfilled')
      THESIS_JOB_PHASES.forEach((phase, i) => thesisJobs.labels(phase).set(phases.value[i]!));
  }

  return {
    registry,
    request: (operation, status, seconds) => requests.record(operation, status, seconds),
    rejected: (status) => rejectedRequests.labels(String(status)).inc(),
    rateDecision: (decision) => rateDecisions.add(decision),
    ingested: (outcome) => ingest.labels(outcome).inc(),
    async render() {
      await readGauges();
      return registry.metrics();
    },
  };
}

/**
 * Counts the rate decision of every admission (REST and MCP share the guard). A 401 is no rate
 * decision: nothing was counted. An allowed request without RateLimit headers on the requests
 * budget went through while the limiter was down.
 */
export function meteredGuard(guard: Guard, metrics: Metrics): Guard {
  function count(admitted: Admission, budget: Budget | undefined): Admission {
    if (admitted.ok)
      metrics.rateDecision(
        budget === 'protocol' || 'ratelimit-remaining' in admitted.value.headers ? 'allowed' : 'unprotected',
      );
    else if (admitted.refused.error.status === 429) metrics.rateDecision('limited');
    else if (admitted.refused.error.status === 503) metrics.rateDecision('refused_unavailable');
    return admitted;
  }
  return {
    admit: async (authorization, protection, budget, memo) =>
      count(await guard.admit(authorization, protection, budget, memo), budget),
  };
}

/** Counts what an ingestor did with each message, passing every outcome and failure through unchanged. */
export function meteredIngestor<T extends BatchIngestor>(ingestor: T, metrics: Metrics): T {
  return {
    ...ingestor,
    async ingest(raw, source) {
      const outcome = await ingestor.ingest(raw, source);
      metrics.ingested(outcome.status);
      return outcome;
    },
    async ingestBatch(raws, source) {
      const outcomes = await ingestor.ingestBatch(raws, source);
      for (const outcome of outcomes) metrics.ingested(outcome.status);
      return outcomes;
    },
  };
}
