/**
 * The Kafka ingest source (docs/architecture.md; docs/source-messages.md, "Kafka"), on kafkajs.
 *
 * A consumer group reads the source topics (topics.ts). Partitions are consumed concurrently
 * (partitionsConsumedConcurrently; kafkajs never hands out two batches of one partition at once), each
 * batch by the batch handler (batch-handler.ts: append, dead letters, then explicit offset commits,
 * autoCommit off).
 *
 * kafkajs restarts a crashed consumer itself only for errors it deems retriable; after a crash with
 * `restart: false` its consumer stays disconnected. This source then starts a new consumer itself,
 * after a capped exponential backoff with jitter, and reports its state (`state()`, for /readyz).
 *
 * kafkajs is no longer maintained, but 2.2.4 negotiates protocol versions Kafka 4 still serves; the
 * tests run it against a real Kafka 4.4.0 broker (KRaft), the version docker-compose.yml pins. Its two
 * Node 24 warnings are dealt with: producers name their partitioner, and its negative timer delays are
 * kept quiet (kafkajs-warnings.ts).
 */
import { Kafka, Partitioners, logLevel as kafkaLogLevel, type Consumer, type Producer } from 'kafkajs';
import type { BatchIngestor } from '../pipeline.ts';
import {
  createBatchHandler,
  DEFAULT_HEARTBEAT_INTERVAL_MS,
  DEFAULT_MAX_MESSAGES_PER_APPEND,
  type DeadLetter,
  type HandledMessage,
} from './batch-handler.ts';
import { quietKafkajsNegativeTimeouts } from './kafkajs-warnings.ts';
import { defaultDeadLetterTopic, defaultSourceTopics } from './topics.ts';

// The batch handler and the topics, for callers that take the source as one module (bench/kafka-batch.bench.ts).
export { createBatchHandler } from './batch-handler.ts';
export { sourceTopics } from './topics.ts';

export const defaultGroupId = 'pulseboard-ingest';

/** Partitions handled at once (each by its own eachBatch). */
export const DEFAULT_PARTITIONS_CONCURRENTLY = 4;

export type KafkaSourceOptions = {
  brokers: readonly string[];
  ingestor: Pick<BatchIngestor, 'ingestBatch'>;
  topics?: readonly string[];
  groupId?: string;
  deadLetterTopic?: string;
  clientId?: string;
  /** Where a group without committed offsets starts: the beginning of each topic (default) or its end. */
  fromBeginning?: boolean;
  /** Called after each message is handled (counters, logs). Never receives the message itself. */
  onMessage?: (handled: HandledMessage) => void;
  logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
  partitionsConsumedConcurrently?: number;
  /** Most messages per ingestBatch call (default DEFAULT_MAX_MESSAGES_PER_APPEND). */
  maxMessagesPerAppend?: number;
  /** The group membership timings (kafkajs defaults: 30 s session, 3 s heartbeats, 60 s rebalance). */
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  rebalanceTimeoutMs?: number;
  /** kafkajs's connection retries (its defaults when absent): how long one start keeps trying. */
  retry?: { retries?: number; initialRetryTime?: number; maxRetryTime?: number };
  /** Called once per change of status (e.g. to log it). */
  onState?: (state: KafkaSourceState) => void;
  /** Replaced in tests: the kafkajs clients, the restart timer and the jitter. */
  clients?: KafkaClients;
  schedule?: (run: () => void, delayMs: number) => () => void;
  random?: () => number;
  restartBaseDelayMs?: number;
  restartMaxDelayMs?: number;
};

/** The part of a kafkajs consumer the source uses. */
export type SourceConsumer = Pick<Consumer, 'connect' | 'subscribe' | 'run' | 'disconnect' | 'on' | 'events'>;
export type SourceProducer = Pick<Producer, 'connect' | 'send' | 'disconnect'>;
export type KafkaClients = { consumer(): SourceConsumer; producer(): SourceProducer };

export type KafkaSourceState = {
  /**
   * starting: connecting the first time; joining: the broker answered, waiting to be let into the group
   * (as long as the group's session timeout while it still holds a killed member); running: in its
   * group; restarting: after a crash; stopped: stop() was called.
   */
  status: 'idle' | 'starting' | 'joining' | 'running' | 'restarting' | 'stopped';
  /** Consumers this source started itself after a crash kafkajs would not recover from. */
  restarts: number;
  /**
   * Failed attempts since the consumer last ran: every crash (kafkajs restarting it or not) and every
   * failed start, so an outage kafkajs rides out itself still shows; 0 once it is in its group.
   */
  failures: number;
  /** When the status last changed (ISO 8601). */
  since: string;
  /** The error behind the last crash (its kafkajs name and message), null before any. */
  lastError: string | null;
};

export type KafkaSource = {
  /**
   * Connects, subscribes and starts consuming; resolves once the consumer runs, or rejects when it
   * cannot. With `retry` it never rejects: a failed first start is retried like a crash (status
   * `restarting`, with backoff) until a consumer runs or stop() is called.
   */
  start(options?: { retry?: boolean }): Promise<void>;
  /** Stops consuming (messages in flight finish) and disconnects. */
  stop(): Promise<void>;
  /** What the consumer is doing now, for readiness reports. */
  state(): KafkaSourceState;
};

const levels = {
  nothing: kafkaLogLevel.NOTHING,
  error: kafkaLogLevel.ERROR,
  warn: kafkaLogLevel.WARN,
  info: kafkaLogLevel.INFO,
  debug: kafkaLogLevel.DEBUG,
} as const;

/** The delay before restart attempt `attempt` (0-based): doubling from base, capped, half of it random. */
export function restartDelay(attempt: number, baseDelayMs: number, maxDelayMs: number, random: () => number): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

const defaultSchedule = (run: () => void, delayMs: number): (() => void) => {
  const timer = setTimeout(run, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
};

function kafkajsClients(options: KafkaSourceOptions): KafkaClients {
  quietKafkajsNegativeTimeouts();
  const kafka = new Kafka({
    clientId: options.clientId ?? 'pulseboard-ingest',
    brokers: [...options.brokers],
    logLevel: levels[options.logLevel ?? 'warn'],
    ...(options.retry ? { retry: options.retry } : {}),
  });
  const timings = {
    ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeout: options.sessionTimeoutMs }),
    ...(options.heartbeatIntervalMs === undefined ? {} : { heartbeatInterval: options.heartbeatIntervalMs }),
    ...(options.rebalanceTimeoutMs === undefined ? {} : { rebalanceTimeout: options.rebalanceTimeoutMs }),
  };
  return {
    consumer: () => kafka.consumer({ groupId: options.groupId ?? defaultGroupId, ...timings }),
    producer: () => kafka.producer({ maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner }),
  };
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

export function createKafkaSource(options: KafkaSourceOptions): KafkaSource {
  const topics = [...(options.topics ?? defaultSourceTopics)];
  const deadLetterTopic = options.deadLetterTopic ?? defaultDeadLetterTopic;
  const clients = options.clients ?? kafkajsClients(options);
  const schedule = options.schedule ?? defaultSchedule;
  const random = options.random ?? Math.random;
  const baseDelayMs = options.restartBaseDelayMs ?? 1_000;
  const maxDelayMs = options.restartMaxDelayMs ?? 60_000;
  const producer = clients.producer();
  let consumer: SourceConsumer | undefined;
  let state: KafkaSourceState = {
    status: 'idle',
    restarts: 0,
    failures: 0,
    since: new Date().toISOString(),
    lastError: null,
  };
  // Restarts of this source's own since the consumer last ran: the backoff's attempt number.
  let failures = 0;
  let cancelRestart: (() => void) | undefined;
  const stoppedNow = () => state.status === 'stopped';

  // onState hears of status changes only (one log line per outage, not one per attempt); state()
  // always has the latest restart count and error.
  const setState = (change: Partial<KafkaSourceState>) => {
    const next = { ...state, ...change };
    if (next.status === state.status) {
      state = next;
      return;
    }
    state = { ...next, since: new Date().toISOString() };
    options.onState?.(state);
  };

  async function deadLetters(letters: readonly DeadLetter[]): Promise<void> {
    await producer.send({
      topic: deadLetterTopic,
      acks: -1,
      messages: letters.map((letter) => ({
        key: `${letter.topic}:${letter.partition}:${letter.offset}`,
        value: JSON.stringify(letter),
      })),
    });
  }

  const eachBatch = createBatchHandler({
    ingestor: options.ingestor,
    deadLetters,
    onMessage: options.onMessage,
    maxMessagesPerAppend: options.maxMessagesPerAppend ?? DEFAULT_MAX_MESSAGES_PER_APPEND,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
  });

  /** A new consumer, in the group and running; a crash it does not recover from schedules the next. */
  async function launch(): Promise<void> {
    const own = clients.consumer();
    consumer = own;
    own.on(own.events.GROUP_JOIN, () => {
      if (consumer !== own || state.status === 'stopped') return;
      failures = 0;
      setState({ status: 'running', failures: 0 });
    });
    own.on(own.events.CRASH, (event) => {
      if (consumer !== own || state.status === 'stopped') return;
      setState({ status: 'restarting', failures: state.failures + 1, lastError: describeError(event.payload.error) });
      // restart: true — kafkajs restarts this consumer itself and rejoins (GROUP_JOIN above).
      if (!event.payload.restart) restartLater();
    });
    // stop() may come while this consumer connects: it then never starts consuming.
    const stopped = async () => {
      if (state.status !== 'stopped') return false;
      await own.disconnect().catch(() => undefined);
      return true;
    };
    // The producer (dead letters) is connected with each consumer: a source whose first start
    // failed has none yet, and connecting a connected kafkajs producer again does nothing.
    await producer.connect();
    await own.connect();
    if (await stopped()) return;
    await own.subscribe({ topics, fromBeginning: options.fromBeginning ?? true });
    if (await stopped()) return;
    // The broker answered (subscribe reads its metadata); run() resolves only once the group lets it in.
    if (consumer === own) setState({ status: 'joining' });
    await own.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? DEFAULT_PARTITIONS_CONCURRENTLY,
      eachBatch,
    });
    // run() resolves after a failed join too (kafkajs reports it as a crash first): only a join still
    // under way when it resolves succeeded.
    if (state.status === 'joining' && consumer === own) {
      failures = 0;
      setState({ status: 'running', failures: 0 });
    }
  }

  function restartLater(): void {
    if (state.status === 'stopped' || cancelRestart) return;
    const delay = restartDelay(failures, baseDelayMs, maxDelayMs, random);
    failures += 1;
    const dead = consumer;
    cancelRestart = schedule(() => {
      cancelRestart = undefined;
      if (state.status === 'stopped') return;
      void (async () => {
        // kafkajs already disconnected a consumer it gave up on; this only releases what is left.
        await dead?.disconnect().catch(() => undefined);
        if (state.status === 'stopped') return;
        setState({ restarts: state.restarts + 1 });
        try {
          await launch();
        } catch (error) {
          // A launch that stop() cut short is not a failure to retry (stop() may have run meanwhile).
          if (stoppedNow()) return;
          setState({ status: 'restarting', failures: state.failures + 1, lastError: describeError(error) });
          restartLater();
        }
      })();
    }, delay);
  }

  return {
    async start(startOptions = {}) {
      setState({ status: 'starting' });
      if (!startOptions.retry) return launch();
      try {
        await launch();
      } catch (error) {
        if (state.status === 'stopped') return;
        setState({ status: 'restarting', failures: state.failures + 1, lastError: describeError(error) });
        restartLater();
      }
    },

    async stop() {
      setState({ status: 'stopped' });
      cancelRestart?.();
      cancelRestart = undefined;
      await consumer?.disconnect();
      await producer.disconnect();
    },

    state: () => state,
  };
}
