import { createReadStream, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { buildApp, buildMetricsApp, buildWorkerApp, metricsFor } from '../../api/app.ts';
import { meteredIngestor } from '../../api/metrics.ts';
import { trackOpenRequests } from '../../api/http/open-requests.ts';
import { loadConfig, type Config } from '../../config/config.ts';
import type { KafkaSource, KafkaSourceState } from '../../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { changeOwner, issueKey, settleKeys } from '../../service/access.ts';
import { KEYS_COLLECTION } from '../../projectors/access.ts';
import { createSupervisor, type LoopStatus } from '../../service/background.ts';
import { createRateLimiter } from '../../service/rate/create.ts';
import { createServices } from '../../service/services.ts';
import { describePostgres } from '../../eventstore/postgres/describe.ts';
import { createThesisReader } from '../../ingest/thesis-reader/reader.ts';
import { createThesisSource } from '../../ingest/thesis-reader/create-source.ts';
import { createWorkerHeartbeat } from '../../service/thesis/feed.ts';
import { openStores, type Stores } from '../../service/stores.ts';
import { createProjectorThread } from './projector-thread.ts';
import { parseStrict, printHelp, usageError } from '../args.ts';

const ROLES = ['all', 'api', 'projectors', 'thesis-reader', 'ingest'] as const;
type Role = (typeof ROLES)[number];

export const SAMPLE_FILE = join(import.meta.dirname, '../../sample/sample.ndjson');
export const LOCAL_OWNER = 'local';

const USAGE = `usage: pulseboard serve [--role ${ROLES.join('|')}]

Serves REST under /v1, MCP at /mcp, the interactive reference at /docs, /healthz and /readyz on
HOST:PORT (default 127.0.0.1:8080). It listens first and catches the read models up in the
background (/readyz shows the lag). With the embedded stores, the first start loads the bundled
sample (300 projects) and prints an API key for the local owner once it listens; later starts print
how to issue another. Roles split one deployment: api (REST + MCP), projectors, thesis-reader,
ingest (Kafka); all (the default) runs every one in this process.
A store, or (for --role ingest) Kafka, that cannot be reached at start ends it within 30 s with one
line naming the server; joining Kafka's consumer group is not bounded (/readyz says degraded until it
consumes). With --role all a Kafka outage only delays ingest (retried in the background, /readyz says
degraded meanwhile).
Exit status: 0 stopped by SIGINT/SIGTERM, 1 cannot start (port in use, a server unreachable), 2 usage error.
`;

type ServeArgs = { ok: true; role: Role; help: boolean } | { ok: false; reason: string };

function parse(args: string[]): ServeArgs {
  const parsed = parseStrict({
    args,
    options: { role: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: false,
  });
  if (!parsed.ok) return parsed;
  const { role = 'all', help = false } = parsed.parsed.values;
  if (!(ROLES as readonly string[]).includes(role))
    return { ok: false, reason: `--role must be one of ${ROLES.join(', ')}, got '${role}'` };
  return { ok: true, role: role as Role, help };
}

/**
 * Whether HOST:PORT can be bound, tried before anything is opened or loaded, so a busy port ends
 * start-up at once with one line instead of after loading the sample. (The real listen can still
 * lose a race; that path closes everything too.)
 */
function listenProblem(host: string, port: number): Promise<string | null> {
  if (port === 0) return Promise.resolve(null);
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(describeListenError(error, host, port)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

function describeListenError(error: unknown, host: string, port: number): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    return `port ${port} on ${host} is already in use (is another pulseboard running? set PORT to use another port)`;
  if (code === 'EACCES') return `not allowed to listen on ${host}:${port} (set PORT above 1023)`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return `cannot listen on ${host}:${port}: no such local address (check HOST)`;
  return `cannot listen on ${host}:${port}: ${error instanceof Error ? error.message : String(error)}`;
}

/** Loads the bundled sample into an empty log. */
async function loadSample(stores: Stores, config: Config): Promise<void> {
  if ((await stores.log.headPosition()) > 0 || !existsSync(SAMPLE_FILE)) return;
  const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
  let accepted = 0;
  for await (const line of createInterface({ input: createReadStream(SAMPLE_FILE), crlfDelay: Infinity })) {
    if (line.trim() === '') continue;
    const outcome = await ingestor.ingest(line, 'ndjson');
    if (outcome.status === 'accepted') accepted += 1;
  }
  // The bundled sample is small: project it before listening, so the printed key meets a full board.
  await stores.catchUp();
  process.stderr.write(`loaded ${accepted} sample messages into ${config.PULSEBOARD_DATA_DIR}\n`);
}

/**
 * Allowlists and links the local owner and issues its first key once the server listens, so a start
 * that never listened (a busy port) cannot have spent it: the key exists only if it was printed to a
 * running server's terminal.
 * Null when the local owner already has a key (a later start prints how to issue another).
 */
async function firstLocalKey(stores: Stores): Promise<string | null> {
  await settleKeys(stores);
  if ((await stores.store.findIds(KEYS_COLLECTION, 'owner', LOCAL_OWNER, 1)).length > 0) return null;
  // Ready to use for every read, the thesis feed included.
  await changeOwner(stores, LOCAL_OWNER, 'allow');
  await changeOwner(stores, LOCAL_OWNER, 'link');
  return (await issueKey(stores, LOCAL_OWNER)).key;
}

/** Servers touched at start must answer within this, so every start-up failure exits well within 30 s. */
export const START_DEADLINE_MS = 15_000;
/** After a failed start the process exits this long after closing began, whatever still holds it. */
const FORCED_EXIT_MS = 3_000;

/** A server's URL without its credentials, to name it in one line. */
function where(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string };

/** `work`'s value, or why it failed or did not answer before `deadline` (ms since the epoch). */
async function byDeadline<T>(deadline: number, work: () => Promise<T>): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome<T>>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, reason: `no answer within ${START_DEADLINE_MS / 1000} s` }),
      Math.max(0, deadline - Date.now()),
    );
  });
  const settled = Promise.resolve()
    .then(work)
    .then(
      (value): Outcome<T> => ({ ok: true, value }),
      (error: unknown): Outcome<T> => ({ ok: false, reason: messageOf(error) }),
    );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The Kafka source's state as a background loop in /readyz: anything but consuming is `retrying`
 * (degraded), joining its group included; a join is not a failure, so it counts none.
 */
function kafkaLoopStatus(state: KafkaSourceState): LoopStatus {
  if (state.status === 'running') return { state: 'running', failures: 0, since: state.since };
  if (state.status === 'stopped') return { state: 'stopped', failures: 0, since: state.since };
  if (state.status === 'joining') return { state: 'retrying', failures: 0, since: state.since };
  return { state: 'retrying', failures: state.failures, since: state.since };
}

/** What a start has opened so far: the one shutdown sequence closes exactly these, in this order. */
type Opened = {
  stop: AbortController;
  app?: FastifyInstance;
  openRequests?: { count(): number };
  metricsApp?: FastifyInstance;
  kafka?: KafkaSource;
  background: Promise<unknown>[];
  loops: () => string[];
  limiter?: { close(): Promise<void> };
  heartbeat?: { close(): Promise<void> };
  stores?: Stores;
};

/**
 * The one shutdown sequence, for a signal and for a failed start alike: stop taking requests, stop
 * Kafka, let the projectors finish their batch, then close the limiter, heartbeat and stores. With
 * `log` (a signal) each step logs what it waited for and how long, so a slow stop can be told apart
 * from a hung one; a failed step does not keep the later ones from running.
 */
async function shutdown(opened: Opened, log: FastifyInstance['log'] | null, signal: string | null): Promise<void> {
  const started = performance.now();
  const since = (from: number) => Math.round(performance.now() - from);
  const step = async (close: (() => Promise<unknown>) | undefined) => {
    if (close)
      await close().catch((error: unknown) => log?.warn({ err: messageOf(error) }, 'shutdown: a close failed'));
  };
  const loops = opened.loops();
  const inFlight = opened.openRequests?.count() ?? 0;
  log?.info({ signal, openRequests: inFlight, backgroundLoops: loops }, 'shutdown: stopping; no new connections');
  opened.stop.abort();
  const backgroundDone = Promise.allSettled(opened.background).then(() => since(started));
  let at = performance.now();
  await step(opened.app && (() => opened.app!.close()));
  await step(opened.metricsApp && (() => opened.metricsApp!.close()));
  log?.info({ openRequests: inFlight, waitedMs: since(at) }, 'shutdown: open requests answered, HTTP server closed');
  if (opened.kafka) {
    at = performance.now();
    await step(() => opened.kafka!.stop());
    log?.info({ waitedMs: since(at) }, 'shutdown: Kafka consumer stopped');
  }
  const backgroundMs = await backgroundDone;
  log?.info(
    { backgroundLoops: loops, waitedMs: backgroundMs },
    'shutdown: projector batch and background loops finished',
  );
  at = performance.now();
  await step(opened.limiter && (() => opened.limiter!.close()));
  await step(opened.heartbeat && (() => opened.heartbeat!.close()));
  await step(opened.stores && (() => opened.stores!.close()));
  log?.info({ waitedMs: since(at), totalMs: since(started) }, 'shutdown: stores closed; exiting');
}

/**
 * A start that cannot go on: one line naming what failed, everything opened so far closed by the
 * shutdown sequence, and a forced exit should a client still hold the process (a MongoDB monitor, a
 * Redis reconnect timer, a connect still pending past the deadline).
 */
async function failStart(opened: Opened, line: string, code: number): Promise<number> {
  process.stderr.write(`pulseboard serve: ${line}\n`);
  setTimeout(() => process.exit(code), FORCED_EXIT_MS).unref();
  await shutdown(opened, null, null);
  return code;
}

export async function run(args: string[]): Promise<number> {
  const parsed = parse(args);
  if (!parsed.ok) return usageError('serve', parsed.reason);
  if (parsed.help) return printHelp(USAGE);
  const { role } = parsed;
  const config = loadConfig();
  const deadline = Date.now() + START_DEADLINE_MS;
  // Settings checked before anything is opened, so these exits leave nothing behind.
  const problem = await listenProblem(config.HOST, config.PORT);
  if (problem) {
    process.stderr.write(`pulseboard serve: ${problem}\n`);
    return 1;
  }
  const ingestsKafka = (role === 'all' || role === 'ingest') && config.KAFKA_BROKERS !== undefined;
  if (role === 'ingest' && !ingestsKafka) {
    process.stderr.write('ingest role: KAFKA_BROKERS is not set; use `pulseboard ingest FILE` for NDJSON\n');
    return 2;
  }
  const readsTheses = (role === 'all' || role === 'thesis-reader') && config.PULSEBOARD_THESIS_FEED === 'on';
  const thesisChoice = readsTheses ? createThesisSource(config) : null;
  if (thesisChoice && !thesisChoice.ok) {
    process.stderr.write(`${thesisChoice.reason}\n`);
    return 2;
  }

  const stop = new AbortController();
  const supervisor = createSupervisor({ signal: stop.signal });
  let projectorThread: ReturnType<typeof createProjectorThread> | null = null;
  const opened: Opened = { stop, background: [], loops: () => Object.keys(backgroundStatus()) };
  const backgroundStatus = (): Record<string, LoopStatus> => ({
    ...supervisor.status(),
    ...projectorThread?.status(),
    ...(opened.kafka ? { 'kafka-ingest': kafkaLoopStatus(opened.kafka.state()) } : {}),
  });

  const postgres = config.POSTGRES_URL !== undefined ? `PostgreSQL at ${describePostgres(config.POSTGRES_URL)}` : null;
  const readStoreName =
    config.MONGODB_URL !== undefined
      ? `MongoDB at ${where(config.MONGODB_URL)}`
      : (postgres ?? `SQLite in ${config.PULSEBOARD_DATA_DIR}`);
  const eventLogName =
    config.EVENTSTORE_URL !== undefined
      ? `KurrentDB at ${where(config.EVENTSTORE_URL)}`
      : (postgres ?? `SQLite in ${config.PULSEBOARD_DATA_DIR}`);
  const storesOpened = await byDeadline(deadline, () => openStores(config, { replicaReads: role === 'api' }));
  if (!storesOpened.ok)
    return failStart(opened, `cannot open the read store (${readStoreName}): ${storesOpened.reason}`, 1);
  const stores = storesOpened.value;
  opened.stores = stores;
  const logAnswers = await byDeadline(deadline, () => stores.log.headPosition());
  if (!logAnswers.ok) return failStart(opened, `cannot reach the event log (${eventLogName}): ${logAnswers.reason}`, 1);
  if (role === 'all' || role === 'projectors')
    projectorThread = createProjectorThread({ onCommit: stores.commits.emit });

  const embedded = config.EVENTSTORE_URL === undefined && config.MONGODB_URL === undefined && postgres === null;
  const local = role === 'all' && embedded;
  if (local) await loadSample(stores, config);
  const limiter = await createRateLimiter(config);
  opened.limiter = limiter;
  const heartbeat = await createWorkerHeartbeat(config);
  opened.heartbeat = heartbeat;
  // Every background loop survives store failures: restarted with backoff, its state in /readyz.
  const services = createServices({ config, stores, limiter, heartbeat, background: backgroundStatus });
  // One set of metrics per process: the API's requests, this process's ingest, the stores' state.
  const metrics = metricsFor(services);

  if (thesisChoice?.ok) {
    if (thesisChoice.kind === 'sample')
      process.stderr.write(
        'thesis feed: using the bundled SAMPLE source (set PULSEBOARD_THESIS_SOURCE_URL for the provider)\n',
      );
    const reader = createThesisReader({ log: stores.log, store: stores.store, source: thesisChoice.source, heartbeat });
    opened.background.push(supervisor.supervise('thesis-reader', (signal) => reader.run(signal)));
  }

  if (ingestsKafka) {
    const brokers = config.KAFKA_BROKERS!;
    const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
    let markReached = () => {};
    const brokerReached = new Promise<void>((resolve) => (markReached = resolve));
    // kafkajs is loaded only by a process that ingests from Kafka.
    const { createKafkaSource } = await import('../../ingest/kafka/kafka-source.ts');
    const kafka = createKafkaSource({
      brokers: brokers.split(',').map((b) => b.trim()),
      ingestor: meteredIngestor(ingestor, metrics),
      // Its own log stays quiet: one line per change between consuming and retrying, with the cause.
      logLevel: 'nothing',
      onState: (state) => {
        if (state.status === 'joining' || state.status === 'running') markReached();
        if (state.status !== 'joining' && state.status !== 'running' && state.status !== 'restarting') return;
        const level = state.status === 'restarting' ? 'warn' : 'info';
        const error = state.status === 'restarting' ? { error: state.lastError } : {};
        process.stderr.write(
          `${JSON.stringify({ level, msg: `ingest: Kafka source ${state.status}`, brokers, ...error })}\n`,
        );
      },
    });
    opened.kafka = kafka;
    // An ingest-only process has nothing to do without Kafka: it must reach the broker by the deadline.
    // Joining the group does not count: a restarted process waits out its killed predecessor's session
    // (30 s) there, degraded in /readyz meanwhile. With the API in the process (--role all) ingest
    // keeps retrying in the background instead.
    if (role === 'ingest') {
      const reached = await byDeadline(deadline, async () => {
        void kafka.start({ retry: true });
        await brokerReached;
      });
      if (!reached.ok)
        return failStart(opened, `cannot reach Kafka at ${brokers}: ${kafka.state().lastError ?? reached.reason}`, 1);
      process.stderr.write(`ingest: reached Kafka at ${brokers}; consuming once its group lets it in\n`);
    }
  }

  const logger = config.PULSEBOARD_LOG_LEVEL === 'silent' ? false : { level: config.PULSEBOARD_LOG_LEVEL };
  const metricsOn = config.PULSEBOARD_METRICS === 'on';
  // Worker roles answer only /healthz, /readyz (and /metrics), with the API's envelope and request ids.
  const app =
    role === 'all' || role === 'api'
      ? buildApp(services, { logger, metrics })
      : buildWorkerApp(services, { logger, metrics });
  opened.app = app;
  opened.openRequests = trackOpenRequests(app.server);
  try {
    await app.listen({ port: config.PORT, host: config.HOST });
  } catch (error) {
    return failStart(opened, describeListenError(error, config.HOST, config.PORT), 1);
  }
  // PULSEBOARD_METRICS_PORT: /metrics alone on its own listener (e.g. reachable only from the scraper's network).
  if (metricsOn && config.PULSEBOARD_METRICS_PORT !== undefined) {
    const metricsApp = buildMetricsApp(services, metrics);
    opened.metricsApp = metricsApp;
    try {
      await metricsApp.listen({ port: config.PULSEBOARD_METRICS_PORT, host: config.HOST });
    } catch (error) {
      return failStart(
        opened,
        `metrics: ${describeListenError(error, config.HOST, config.PULSEBOARD_METRICS_PORT)}`,
        1,
      );
    }
    const bound = metricsApp.server.address();
    process.stdout.write(
      `metrics on http://${config.HOST}:${typeof bound === 'object' && bound ? bound.port : config.PULSEBOARD_METRICS_PORT}/metrics\n`,
    );
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST}:${port}`;
  // Listen first, then catch up: a process restarted behind a backlog answers /healthz at once and
  // reports its lag in /readyz, and reads serve up to each collection's committed checkpoint meanwhile.
  if (projectorThread)
    opened.background.push(supervisor.supervise('projectors', (signal) => projectorThread.run(signal)));
  if (role === 'all' && opened.kafka) {
    void opened.kafka.start({ retry: true });
    process.stderr.write(
      `ingest: consuming Kafka at ${config.KAFKA_BROKERS} (retried in the background while unreachable)\n`,
    );
  }
  process.stdout.write(`pulseboard (${role}) listening on ${url}/v1  (MCP: ${url}/mcp, docs: ${url}/docs)\n`);
  const localKey = local ? await firstLocalKey(stores) : null;
  if (localKey) {
    process.stdout.write(
      `API key for this local instance (shown once; owner "${LOCAL_OWNER}", allowlisted and linked):\n${localKey}\n`,
    );
    process.stdout.write(`try: curl -H "Authorization: Bearer ${localKey}" ${url}/v1/projects\n`);
  } else if (local) {
    process.stdout.write(
      `API key: the local owner's first key was printed by an earlier start; issue another with: npx pulseboard keys issue --owner ${LOCAL_OWNER}\n`,
    );
  }

  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  await shutdown(opened, app.log, signal);
  return 0;
}
