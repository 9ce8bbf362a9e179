/**
 * A real single-node Apache Kafka broker for tests and benches, from Maven Central artifacts alone:
 * `org.apache.kafka:kafka_2.13` and its runtime dependencies, copied by Maven into a cache directory
 * once, then run as one KRaft process (broker and controller) on free loopback ports.
 *
 * KAFKA_VERSION is the newest release kafkajs 2.2.4 was tested against here (docker-compose.yml pins
 * the same). Where java or mvn is missing the tests skip with the reason, unless
 * PULSEBOARD_REQUIRE_SERVERS=1 (as .ci/run sets it): then they run and fail.
 *
 *   node test/support/kafka-broker.ts --fetch     copies the jars into the cache (what .ci/run does)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { quietKafkajsNegativeTimeouts } from '../../ingest/kafka/kafkajs-warnings.ts';

export const KAFKA_VERSION = '4.4.0';
const CACHE_ROOT = process.env.PULSEBOARD_KAFKA_CACHE ?? join(homedir(), '.cache', 'pulseboard-kafka');
const COMPLETE = '.complete';
/** Bounds, not measurements: a JVM start on a loaded 2-core machine can take tens of seconds. */
const READY_TIMEOUT_MS = 180_000;
const FETCH_TIMEOUT_MS = 900_000;

export function requireServers(): boolean {
  return process.env.PULSEBOARD_REQUIRE_SERVERS === '1';
}

function runs(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 60_000 });
  return result.error === undefined && result.status === 0;
}

function jarsDir(version: string): string {
  return join(CACHE_ROOT, version, 'libs');
}

function jarsCached(version: string): boolean {
  return existsSync(join(jarsDir(version), COMPLETE));
}

/**
 * Why the real-broker tests cannot run here, or false when they can. With PULSEBOARD_REQUIRE_SERVERS=1
 * always false: a missing java or mvn then fails the tests instead of skipping them.
 */
export function kafkaSkipReason(version = KAFKA_VERSION): false | string {
  if (requireServers()) return false;
  if (!runs('java', ['-version'])) return 'needs java (17 or later) to run a Kafka broker';
  if (!jarsCached(version) && !runs('mvn', ['-v']))
    return `needs mvn to fetch kafka_2.13 ${version} from Maven Central`;
  return false;
}

function pom(version: string): string {
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>pulseboard</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>${version}</version>
    </dependency>
  </dependencies>
</project>
`;
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return once(child, 'exit').then(([code]) => code as number | null);
}

/**
 * The broker's jars, copied by `mvn dependency:copy-dependencies` on first use. Concurrent callers
 * (test files in parallel workers) wait on one lock directory instead of running Maven twice.
 */
export async function kafkaJars(version = KAFKA_VERSION): Promise<string> {
  const dir = join(CACHE_ROOT, version);
  const libs = jarsDir(version);
  const lock = join(dir, '.lock');
  const started = Date.now();
  mkdirSync(dir, { recursive: true });
  while (!jarsCached(version)) {
    if (Date.now() - started > FETCH_TIMEOUT_MS) throw new Error(`kafka_2.13 ${version}: gave up waiting for its jars`);
    try {
      mkdirSync(lock);
    } catch {
      // Another process holds the lock; a lock older than the fetch bound was left by a killed one.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > FETCH_TIMEOUT_MS)
        rmSync(lock, { recursive: true, force: true });
      await sleep(1000);
      continue;
    }
    try {
      if (jarsCached(version)) break;
      writeFileSync(join(dir, 'pom.xml'), pom(version));
      const partial = join(dir, 'libs.partial');
      rmSync(partial, { recursive: true, force: true });
      const mvn = spawn(
        'mvn',
        [
          '-B',
          '-q',
          '-f',
          join(dir, 'pom.xml'),
          'dependency:copy-dependencies',
          '-DincludeScope=runtime',
          `-DoutputDirectory=${partial}`,
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let output = '';
      mvn.stdout!.on('data', (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000)));
      mvn.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000)));
      const code = await exitOf(mvn);
      if (code !== 0) throw new Error(`mvn could not fetch kafka_2.13 ${version} (exit ${code}): ${output.trim()}`);
      writeFileSync(join(partial, COMPLETE), `${readdirSync(partial).length} jars\n`);
      rmSync(libs, { recursive: true, force: true });
      renameSync(partial, libs);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  return libs;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address for a free port');
  return address.port;
}

export type KafkaBroker = {
  readonly version: string;
  /** kafkajs's `brokers` for this broker. */
  readonly brokers: string[];
  /** Creates topics and waits for their leaders. */
  createTopics(topics: readonly { topic: string; partitions: number }[]): Promise<void>;
  /** SIGKILL, as a crash would; resolves once the process has exited. Its data stays for start(). */
  kill(): Promise<void>;
  /** Starts the broker again on the same ports and data (after kill); resolves once it answers. */
  start(): Promise<void>;
  /** Stops the broker and removes its data; safe to call more than once. */
  stop(): Promise<void>;
};

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export type KafkaBrokerOptions = {
  version?: string;
  /** JVM flags favouring a quick start over peak throughput (default true; a bench turns it off). */
  quickStart?: boolean;
};

const QUICK_START_FLAGS = ['-Xms128m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];

function serverProperties(dir: string, port: number, controllerPort: number): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${join(dir, 'data')}`,
    // One node: every internal topic with one replica, or the group coordinator never becomes available.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    // Lets tests shorten the session timeout to prove heartbeats keep a member alive.
    'group.min.session.timeout.ms=1000',
    'auto.create.topics.enable=false',
    'num.partitions=1',
    '',
  ].join('\n');
}

/**
 * A cluster id: 16 random bytes in URL-safe base64 without padding (what `random-uuid` prints); like Kafka's
 * Uuid.randomUuid, never one starting with '-', which the format tool's argument parser takes for a flag.
 */
export function kafkaClusterId(random: () => Buffer = () => randomBytes(16)): string {
  for (;;) {
    const id = random().toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** Formats a fresh KRaft log directory and starts a broker in it; stop() removes it. */
export async function startKafkaBroker(options: KafkaBrokerOptions = {}): Promise<KafkaBroker> {
  const version = options.version ?? KAFKA_VERSION;
  quietKafkajsNegativeTimeouts();
  const libs = await kafkaJars(version);
  const [port, controllerPort] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'pb-kafka-'));
  const properties = join(dir, 'server.properties');
  writeFileSync(properties, serverProperties(dir, port, controllerPort));
  const classpath = `${libs}/*`;
  const flags = options.quickStart === false ? ['-Xms512m', '-Xmx1g'] : QUICK_START_FLAGS;
  const brokers = [`127.0.0.1:${port}`];
  let child: ChildProcess | null = null;
  let stopped = false;

  const clusterId = kafkaClusterId();
  const format = spawn(
    'java',
    [...flags, '-cp', classpath, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', properties],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let formatOutput = '';
  format.stdout!.on('data', (chunk: Buffer) => (formatOutput += chunk.toString('utf8')));
  format.stderr!.on('data', (chunk: Buffer) => (formatOutput += chunk.toString('utf8')));
  const formatted = await exitOf(format);
  if (formatted !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`kafka.tools.StorageTool format failed (exit ${formatted}): ${formatOutput.trim().slice(-2000)}`);
  }

  async function answers(): Promise<boolean> {
    const admin = new Kafka({
      clientId: 'pb-broker-probe',
      brokers,
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      connectionTimeout: 2000,
    }).admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      return cluster.brokers.length > 0 && cluster.controller !== null;
    } catch {
      return false;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  async function launch(): Promise<void> {
    const proc = spawn('java', [...flags, '-cp', classpath, 'kafka.Kafka', properties], { stdio: 'ignore' });
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    child = proc;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new Error(`the Kafka ${version} broker exited at start (code ${proc.exitCode})`);
      if (await answers()) return;
      await sleep(250);
    }
    proc.kill('SIGKILL');
    throw new Error(`the Kafka ${version} broker did not answer within ${READY_TIMEOUT_MS / 1000} s`);
  }

  async function kill(): Promise<void> {
    const proc = child;
    child = null;
    if (proc === null) return;
    proc.kill('SIGKILL');
    await exitOf(proc);
  }

  await launch();
  return {
    version,
    brokers,
    async createTopics(topics) {
      const admin = new Kafka({ clientId: 'pb-broker-admin', brokers, logLevel: logLevel.WARN }).admin();
      await admin.connect();
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: topics.map(({ topic, partitions }) => ({ topic, numPartitions: partitions })),
        });
      } finally {
        await admin.disconnect();
      }
    },
    kill,
    async start() {
      if (stopped) throw new Error('the broker was stopped');
      if (child !== null) return;
      await launch();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (import.meta.main && process.argv.includes('--fetch')) {
  const libs = await kafkaJars();
  process.stdout.write(`kafka_2.13 ${KAFKA_VERSION}: ${readdirSync(libs).length - 1} jars in ${libs}\n`);
}
