import { createReadStream, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { buildApp, buildMetricsApp, buildWorkerApp, metricsFor } from '../../api/app.ts';
import { meteredIngestor } from '../../api/metrics.ts';
import { trackOpenRequests } from '../../api/http/open-requests.ts';
import { loadConfig, type Config } from '../../config/config.ts';
import { createKafkaSource, type KafkaSource } from '../../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { changeOwner, issueKey, settleKeys } from '../../service/access.ts';
import { KEYS_COLLECTION } from '../../projectors/access.ts';
import { createSupervisor } from '../../service/background.ts';
import { createRateLimiter } from '../../service/rate/create.ts';
import { createServices } from '../../service/services.ts';
import { createThesisReader } from '../../ingest/thesis-reader/reader.ts';
import { createThesisSource } from '../../ingest/thesis-reader/source.ts';
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
Exit status: 0 stopped by SIGINT/SIGTERM, 1 cannot start (port in use, a store unreachable), 2 usage error.
`;

type ServeArgs = { ok: true; role: Role; help: boolean } | { ok: false; reason: string };

function parse(args: string[]): ServeArgs {
  const parsed = parseStrict({ args, options: { role: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: false });
  if (!parsed.ok) return parsed;
  const { role = 'all', help = false } = parsed.parsed.values;
  if (!(ROLES as readonly string[]).includes(role)) return { ok: false, reason: `--role must be one of ${ROLES.join(', ')}, got '${role}'` };
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
  if (code === 'EADDRINUSE') return `port ${port} on ${host} is already in use (is another pulseboard running? set PORT to use another port)`;
  if (code === 'EACCES') return `not allowed to listen on ${host}:${port} (set PORT above 1023)`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `cannot listen on ${host}:${port}: no such local address (check HOST)`;
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

export async function run(args: string[]): Promise<number> {
  const parsed = parse(args);
  if (!parsed.ok) return usageError('serve', parsed.reason);
  if (parsed.help) return printHelp(USAGE);
  const { role } = parsed;
  const config = loadConfig();
  const problem = await listenProblem(config.HOST, config.PORT);
  if (problem) {
    process.stderr.write(`pulseboard serve: ${problem}\n`);
    return 1;
  }
  const stores = await openStores(config);
  const embedded = config.EVENTSTORE_URL === undefined && config.MONGODB_URL === undefined;
  const local = role === 'all' && embedded;
  if (local) await loadSample(stores, config);
  const limiter = createRateLimiter(config);
  const heartbeat = createWorkerHeartbeat(config);
  const stop = new AbortController();
  // Every background loop survives store failures: restarted with backoff, its state in /readyz.
  const supervisor = createSupervisor({ signal: stop.signal });
  const projectorThread = role === 'all' || role === 'projectors' ? createProjectorThread({ onCommit: stores.commits.emit }) : null;
  const backgroundStatus = () => ({ ...supervisor.status(), ...projectorThread?.status() });
  const services = createServices({ config, stores, limiter, heartbeat, background: backgroundStatus });
  const background: Promise<unknown>[] = [];
  // One set of metrics per process: the API's requests, this process's ingest, the stores' state.
  const metrics = metricsFor(services);

  if ((role === 'all' || role === 'thesis-reader') && config.PULSEBOARD_THESIS_FEED === 'on') {
    const choice = createThesisSource(config);
    if (!choice.ok) {
      process.stderr.write(`${choice.reason}\n`);
      return 2;
    }
    if (choice.kind === 'sample') process.stderr.write('thesis feed: using the bundled SAMPLE source (set PULSEBOARD_THESIS_SOURCE_URL for the provider)\n');
    const reader = createThesisReader({ log: stores.log, store: stores.store, source: choice.source, heartbeat });
    background.push(supervisor.supervise('thesis-reader', (signal) => reader.run(signal)));
  }

  let kafka: KafkaSource | null = null;
  if ((role === 'all' || role === 'ingest') && config.KAFKA_BROKERS !== undefined) {
    const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
    kafka = createKafkaSource({ brokers: config.KAFKA_BROKERS.split(',').map((b) => b.trim()), ingestor: meteredIngestor(ingestor, metrics) });
    await kafka.start();
    process.stderr.write(`ingest: consuming Kafka at ${config.KAFKA_BROKERS}\n`);
  } else if (role === 'ingest') {
    process.stderr.write('ingest role: KAFKA_BROKERS is not set; use `pulseboard ingest FILE` for NDJSON\n');
    return 2;
  }

  const logger = config.PULSEBOARD_LOG_LEVEL === 'silent' ? false : { level: config.PULSEBOARD_LOG_LEVEL };
  let app: FastifyInstance;
  const metricsOn = config.PULSEBOARD_METRICS === 'on';
  if (role === 'all' || role === 'api') {
    app = buildApp(services, { logger, metrics });
  } else {
    // Worker roles answer only /healthz, /readyz (and /metrics), with the API's envelope and request ids.
    app = buildWorkerApp(services, { logger, metrics });
  }
  const close = async () => {
    // Graceful: stop taking requests, let the projectors finish their batch, then close the stores.
    stop.abort();
    await app.close();
    await kafka?.stop();
    await Promise.allSettled(background);
    await limiter.close();
    await heartbeat.close();
    await stores.close();
  };
  const openRequests = trackOpenRequests(app.server);
  try {
    await app.listen({ port: config.PORT, host: config.HOST });
  } catch (error) {
    process.stderr.write(`pulseboard serve: ${describeListenError(error, config.HOST, config.PORT)}\n`);
    // Whatever hangs on closing must not keep a server that never listened alive.
    setTimeout(() => process.exit(1), 3000).unref();
    await close();
    return 1;
  }
  // PULSEBOARD_METRICS_PORT: /metrics alone on its own listener (e.g. reachable only from the scraper's network).
  let metricsApp: FastifyInstance | null = null;
  if (metricsOn && config.PULSEBOARD_METRICS_PORT !== undefined) {
    metricsApp = buildMetricsApp(services, metrics);
    await metricsApp.listen({ port: config.PULSEBOARD_METRICS_PORT, host: config.HOST });
    const bound = metricsApp.server.address();
    process.stdout.write(`metrics on http://${config.HOST}:${typeof bound === 'object' && bound ? bound.port : config.PULSEBOARD_METRICS_PORT}/metrics\n`);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST}:${port}`;
  // Listen first, then catch up: a process restarted behind a backlog answers /healthz at once and
  // reports its lag in /readyz, and reads serve up to each collection's committed checkpoint meanwhile.
  if (projectorThread) background.push(supervisor.supervise('projectors', (signal) => projectorThread.run(signal)));
  process.stdout.write(`pulseboard (${role}) listening on ${url}/v1  (MCP: ${url}/mcp, docs: ${url}/docs)\n`);
  const localKey = local ? await firstLocalKey(stores) : null;
  if (localKey) {
    process.stdout.write(`API key for this local instance (shown once; owner "${LOCAL_OWNER}", allowlisted and linked):\n${localKey}\n`);
    process.stdout.write(`try: curl -H "Authorization: Bearer ${localKey}" ${url}/v1/projects\n`);
  } else if (local) {
    process.stdout.write(`API key: the local owner's first key was printed by an earlier start; issue another with: npx pulseboard keys issue --owner ${LOCAL_OWNER}\n`);
  }

  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  // Graceful: stop taking requests, let the projectors finish their batch, then close the stores.
  // Each step logs what it waited for and how long, so a slow stop can be told apart from a hung one.
  const started = performance.now();
  const since = (from: number) => Math.round(performance.now() - from);
  const loops = Object.keys(backgroundStatus());
  app.log.info({ signal, openRequests: openRequests.count(), backgroundLoops: loops }, 'shutdown: stopping; no new connections');
  stop.abort();
  const backgroundDone = Promise.allSettled(background).then(() => since(started));
  let step = performance.now();
  const inFlight = openRequests.count();
  await app.close();
  await metricsApp?.close();
  app.log.info({ openRequests: inFlight, waitedMs: since(step) }, 'shutdown: open requests answered, HTTP server closed');
  if (kafka) {
    step = performance.now();
    await kafka.stop();
    app.log.info({ waitedMs: since(step) }, 'shutdown: Kafka consumer stopped');
  }
  const backgroundMs = await backgroundDone;
  app.log.info({ backgroundLoops: loops, waitedMs: backgroundMs }, 'shutdown: projector batch and background loops finished');
  step = performance.now();
  await limiter.close();
  await heartbeat.close();
  await stores.close();
  app.log.info({ waitedMs: since(step), totalMs: since(started) }, 'shutdown: stores closed; exiting');
  return 0;
}
