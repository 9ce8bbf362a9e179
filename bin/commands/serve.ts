import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { buildApp, buildMetricsApp, buildWorkerApp, metricsFor } from '../../api/app.ts';
import { meteredIngestor } from '../../api/metrics.ts';
import { trackOpenRequests } from '../../api/http/open-requests.ts';
import { loadConfig, type Config } from '../../config/config.ts';
import { createKafkaSource, type KafkaSource } from '../../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { changeOwner, issueKey } from '../../service/access.ts';
import { createSupervisor } from '../../service/background.ts';
import { createRateLimiter } from '../../service/rate/create.ts';
import { createServices } from '../../service/services.ts';
import { createThesisReader, createThesisSource, createWorkerHeartbeat } from '../../service/thesis/feed.ts';
import { openStores, type Stores } from '../../service/stores.ts';
import { createProjectorThread } from './projector-thread.ts';

const ROLES = ['all', 'api', 'projectors', 'thesis-reader', 'ingest'] as const;
type Role = (typeof ROLES)[number];

export const SAMPLE_FILE = join(import.meta.dirname, '../../sample/sample.ndjson');
export const LOCAL_OWNER = 'local';

function parseRole(args: string[]): Role | null {
  const i = args.indexOf('--role');
  if (i < 0) return 'all';
  const role = args[i + 1];
  return (ROLES as readonly string[]).includes(role ?? '') ? (role as Role) : null;
}

/** Loads the bundled sample into an empty log and issues an allowlisted, linked key for it. */
async function initialiseEmbedded(stores: Stores, config: Config): Promise<string | null> {
  if ((await stores.log.headPosition()) > 0 || !existsSync(SAMPLE_FILE)) return null;
  const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
  let accepted = 0;
  for await (const line of createInterface({ input: createReadStream(SAMPLE_FILE), crlfDelay: Infinity })) {
    if (line.trim() === '') continue;
    const outcome = await ingestor.ingest(line, 'ndjson');
    if (outcome.status === 'accepted') accepted += 1;
  }
  await changeOwner(stores, LOCAL_OWNER, 'allow');
  await changeOwner(stores, LOCAL_OWNER, 'link');
  const issued = await issueKey(stores, LOCAL_OWNER);
  // The bundled sample is small: project it before listening, so the printed key meets a full board.
  await stores.catchUp();
  process.stderr.write(`loaded ${accepted} sample messages into ${config.PULSEBOARD_DATA_DIR}\n`);
  return issued.key;
}

export async function run(args: string[]): Promise<number> {
  const role = parseRole(args);
  if (!role) {
    process.stderr.write(`usage: pulseboard serve [--role ${ROLES.join('|')}]\n`);
    return 2;
  }
  const config = loadConfig();
  const stores = await openStores(config);
  const embedded = config.EVENTSTORE_URL === undefined && config.MONGODB_URL === undefined;
  const localKey = role === 'all' && embedded ? await initialiseEmbedded(stores, config) : null;
  const limiter = createRateLimiter(config);
  const heartbeat = createWorkerHeartbeat(config);
  const stop = new AbortController();
  // Every background loop survives store failures: restarted with backoff, its state in /readyz.
  const supervisor = createSupervisor({ signal: stop.signal });
  const projectorThread = role === 'all' || role === 'projectors' ? createProjectorThread() : null;
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
  const openRequests = trackOpenRequests(app.server);
  await app.listen({ port: config.PORT, host: config.HOST });
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
  if (localKey) {
    process.stdout.write(`API key for this local instance (shown once; owner "${LOCAL_OWNER}", allowlisted and linked):\n${localKey}\n`);
    process.stdout.write(`try: curl -H "Authorization: Bearer ${localKey}" ${url}/v1/projects\n`);
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
