/**
 * Servers for the adapters that need one (KurrentDB, MongoDB, Kafka), started through testcontainers.
 * Whether a Docker engine answers is probed once per process; tests that need one declare themselves
 * skipped with the reason when it does not, so a machine without Docker stays green
 * without pretending those adapters were tested.
 */
import { createServer } from 'node:net';
import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';

/** Pinned images, the same versions as docker-compose.yml. */
export const images = {
  kurrentdb: 'kurrentplatform/kurrentdb:25.1.3',
  mongodb: 'mongo:8.0.12',
  // The version test/support/kafka-broker.ts runs from Maven Central (kafkajs 2.2.4 tested against it).
  kafka: 'apache/kafka:4.4.0',
} as const;

const PROBE_TIMEOUT_MS = 5_000;

let probe: Promise<string | null> | undefined;

/** null when a Docker engine answers, otherwise why not (asked once per process, with a short timeout). */
export function dockerUnavailableReason(): Promise<string | null> {
  probe ??= (async () => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`no answer from a Docker engine within ${PROBE_TIMEOUT_MS} ms`),
        PROBE_TIMEOUT_MS,
      );
      timer.unref();
    });
    const detect = getContainerRuntimeClient().then(
      () => null,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    try {
      return await Promise.race([detect, timeout]);
    } finally {
      clearTimeout(timer);
    }
  })();
  return probe;
}

/**
 * The skip reason for skipFor() (test/support/skip.ts): false when Docker answers, else a reason naming what could not run,
 * e.g. "needs a Docker engine for KurrentDB (testcontainers): Could not find a working container runtime strategy".
 */
export async function skipUnlessDocker(what: string): Promise<false | string> {
  const reason = await dockerUnavailableReason();
  if (reason === null) return false;
  // CI on a runner with Docker sets this, so a broken engine fails the run instead of skipping quietly.
  if (process.env.PULSEBOARD_REQUIRE_DOCKER === '1')
    throw new Error(`PULSEBOARD_REQUIRE_DOCKER=1 but ${what} cannot run: ${reason}`);
  return `needs a Docker engine for ${what} (testcontainers): ${reason}`;
}

export type Running<T> = T & { stop(): Promise<void> };

function stopper(container: StartedTestContainer): () => Promise<void> {
  return async () => {
    await container.stop();
  };
}

/** A single in-memory KurrentDB node in insecure dev mode. */
export async function startKurrentDb(): Promise<Running<{ connectionString: string }>> {
  const container = await new GenericContainer(images.kurrentdb)
    .withEnvironment({
      KURRENTDB_INSECURE: 'true',
      KURRENTDB_CLUSTER_SIZE: '1',
      KURRENTDB_MEM_DB: 'true',
      KURRENTDB_RUN_PROJECTIONS: 'None',
    })
    .withExposedPorts(2113)
    .withWaitStrategy(
      Wait.forHttp('/health/live', 2113).forStatusCodeMatching((status) => status >= 200 && status < 300),
    )
    .withStartupTimeout(120_000)
    .start();
  return {
    connectionString: `kurrentdb://${container.getHost()}:${container.getMappedPort(2113)}?tls=false`,
    stop: stopper(container),
  };
}

/**
 * MongoDB as a one-node replica set (the read store commits in transactions, which need one).
 * The member is registered as localhost inside the container, so clients connect directly.
 */
export async function startMongo(): Promise<Running<{ url(database: string): string }>> {
  const container = await new GenericContainer(images.mongodb)
    .withCommand(['--replSet', 'rs0', '--bind_ip_all'])
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
    .withStartupTimeout(120_000)
    .start();
  const initiate = await container.exec([
    'mongosh',
    '--quiet',
    '--eval',
    "rs.initiate({_id: 'rs0', members: [{_id: 0, host: 'localhost:27017'}]}).ok",
  ]);
  if (initiate.exitCode !== 0) {
    await container.stop();
    throw new Error(`MongoDB replica set initiation failed: ${initiate.output}`);
  }
  for (let attempt = 0; ; attempt += 1) {
    const primary = await container.exec([
      'mongosh',
      '--quiet',
      '--eval',
      'quit(db.hello().isWritablePrimary ? 0 : 1)',
    ]);
    if (primary.exitCode === 0) break;
    if (attempt >= 120) {
      await container.stop();
      throw new Error('MongoDB replica set did not elect a primary');
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const host = container.getHost();
  const port = container.getMappedPort(27017);
  return {
    url: (database: string) => `mongodb://${host}:${port}/${database}?directConnection=true`,
    stop: stopper(container),
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

/**
 * A single-node Kafka broker in KRaft mode. Clients must reach the address the broker advertises,
 * so the container port is bound to a host port chosen before start and advertised as such.
 */
export async function startKafka(): Promise<Running<{ brokers: string[] }>> {
  const runtime = await getContainerRuntimeClient();
  const host = runtime.info.containerRuntime.host;
  const port = await freePort();
  const container = await new GenericContainer(images.kafka)
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${host}:${port}`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    })
    .withExposedPorts({ container: 9092, host: port })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(120_000)
    .start();
  return { brokers: [`${host}:${port}`], stop: stopper(container) };
}
