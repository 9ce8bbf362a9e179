/**
 * The Kafka ingest source (docs/architecture.md; docs/source-messages.md, "Kafka"), on kafkajs.
 *
 * A consumer group reads the source topics. Partitions are consumed concurrently
 * (partitionsConsumedConcurrently; kafkajs never hands out two batches of one partition at once), and
 * each batch kafkajs hands over goes to the event log through one `ingestBatch` call (one
 * `EventLog.appendBatch`: one transaction on the embedded log, one idempotent append per stream on
 * KurrentDB), in offset order; a batch longer than `maxMessagesPerAppend` is split into consecutive
 * parts. appendBatch keeps every stream's groups in input order, and a message's key names its
 * stream's entity (keyFor), so one entity's messages reach the event log in the order they were
 * produced. Offsets are resolved and committed explicitly (autoCommit off) only once a part is
 * stored and its rejected messages are dead-lettered, so a committed offset never passes a message
 * whose events are not stored. When the ingestor throws (e.g. the event log is down) nothing of that
 * part is resolved and the handler rethrows: the part is delivered again, and deterministic event
 * ids make re-appending what was stored of it (KurrentDB stores a batch per stream) a no-op.
 *
 * kafkajs restarts a crashed consumer itself only for errors it deems retriable; after a crash with
 * `restart: false` its consumer stays disconnected. This source then starts a new consumer itself,
 * after a capped exponential backoff with jitter, and reports its state (`state()`, for /readyz).
 *
 * The rejected messages of a part are written to the dead-letter topic, in one producer send, before
 * their offsets are resolved, each as {topic, partition, offset, key, path, reason, message}, where
 * `message` is kept by the NDJSON dead-letter file's rule (`deadLetterMessage`: every `thesisText`
 * withheld, a text that might hold one and cannot be searched withheld whole).
 *
 * kafkajs heartbeats only when called, so the handler calls heartbeat() every heartbeat interval while
 * a part is being appended: a slow event log cannot hold a member past its session timeout.
 *
 * kafkajs is no longer maintained, but 2.2.4 negotiates protocol versions Kafka 4 still serves; the
 * tests run it against a real Kafka 4.4.0 broker (KRaft), the version docker-compose.yml pins. Its two
 * Node 24 warnings are dealt with here: producers name their partitioner, and its negative timer
 * delays are kept quiet.
 */
import {
  Kafka,
  Partitioners,
  logLevel as kafkaLogLevel,
  type Consumer,
  type EachBatchPayload,
  type KafkaMessage,
  type Producer,
} from 'kafkajs';
import { deadLetterMessage } from '../dead-letter-message.ts';
import type { BatchIngestor, IngestOutcome } from '../pipeline.ts';

export const sourceTopics = {
  projects: 'pulseboard.projects',
  calls: 'pulseboard.calls',
  pulse: 'pulseboard.pulse',
} as const;

export const defaultSourceTopics: readonly string[] = Object.values(sourceTopics);
export const defaultDeadLetterTopic = 'pulseboard.dead-letter';
export const defaultGroupId = 'pulseboard-ingest';

/** Partitions handled at once (each by its own eachBatch). */
export const DEFAULT_PARTITIONS_CONCURRENTLY = 4;
/**
 * Most messages per ingestBatch call (one log transaction on the embedded log), as NDJSON ingest's
 * default batch: a kafkajs batch (1 MiB per partition by default) rarely holds more.
 */
export const DEFAULT_MAX_MESSAGES_PER_APPEND = 4000;
/** kafkajs's own default heartbeat interval; its session timeout defaults to 30 s. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 3000;

export type HandledMessage = { topic: string; partition: number; offset: string; outcome: IngestOutcome };

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
  /** starting: connecting the first time; running: in its group; restarting: after a crash; stopped: stop() was called. */
  status: 'idle' | 'starting' | 'running' | 'restarting' | 'stopped';
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

export type DeadLetter = {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  path: string;
  reason: string;
  /** The message as deadLetterMessage keeps it (every thesisText withheld); null when it had no value. */
  message: unknown;
};

const levels = {
  nothing: kafkaLogLevel.NOTHING,
  error: kafkaLogLevel.ERROR,
  warn: kafkaLogLevel.WARN,
  info: kafkaLogLevel.INFO,
  debug: kafkaLogLevel.DEBUG,
} as const;

function nextOffset(offset: string): string {
  return (BigInt(offset) + 1n).toString();
}

export type BatchHandlerOptions = {
  ingestor: Pick<BatchIngestor, 'ingestBatch'>;
  /** Stores rejected messages (offset order); must not return before every one is durably written. */
  deadLetters(letters: readonly DeadLetter[]): Promise<void>;
  onMessage?: (handled: HandledMessage) => void;
  /** Most messages per ingestBatch call (default DEFAULT_MAX_MESSAGES_PER_APPEND). */
  maxMessagesPerAppend?: number;
  /** How often heartbeat() is called while a part is appended (default DEFAULT_HEARTBEAT_INTERVAL_MS). */
  heartbeatIntervalMs?: number;
};

/**
 * Runs `work` calling `heartbeat` every `intervalMs` until it settles. A failed heartbeat (e.g. a
 * rebalance began) is not fatal here: the part is still stored, and the heartbeat after it reports it.
 */
async function heartbeating<T>(work: () => Promise<T>, heartbeat: () => Promise<void>, intervalMs: number): Promise<T> {
  const timer = setInterval(() => void heartbeat().catch(() => undefined), intervalMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * The per-batch work of the source, apart from kafkajs so its offset handling can be tested: the
 * batch in offset order, one ingestBatch call per part of at most `maxMessagesPerAppend` messages,
 * the part's rejects dead-lettered in one send, then its offsets resolved and committed.
 */
export function createBatchHandler(options: BatchHandlerOptions): (payload: EachBatchPayload) => Promise<void> {
  const maxPerAppend = Math.max(1, options.maxMessagesPerAppend ?? DEFAULT_MAX_MESSAGES_PER_APPEND);
  const heartbeatMs = Math.max(1, options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS);

  return async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale } = payload;
    const { messages } = batch;
    let handled: string | undefined;
    let uncommitted = false;
    const commit = async (): Promise<void> => {
      if (handled === undefined || !uncommitted) return;
      uncommitted = false;
      await commitOffsetsIfNecessary({
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: nextOffset(handled) }] }],
      });
    };
    const resolve = (message: KafkaMessage, outcome: IngestOutcome) => {
      options.onMessage?.({ topic: batch.topic, partition: batch.partition, offset: message.offset, outcome });
      resolveOffset(message.offset);
      handled = message.offset;
      uncommitted = true;
    };

    for (let start = 0; start < messages.length; start += maxPerAppend) {
      // After a rebalance or stop, leave the rest to whoever owns the partition next.
      if (!isRunning() || isStale()) break;
      const part = messages.slice(start, start + maxPerAppend);
      const raws = part.map((message) => (message.value === null ? null : message.value.toString('utf8')));
      const values = raws.filter((raw): raw is string => raw !== null);
      let outcomes: IngestOutcome[];
      try {
        const append = () => options.ingestor.ingestBatch(values, 'kafka');
        const stored = values.length > 0 ? await heartbeating(append, heartbeat, heartbeatMs) : [];
        if (stored.length !== values.length)
          throw new Error(`ingestBatch answered ${stored.length} outcomes for ${values.length} messages`);
        let next = 0;
        outcomes = raws.map((raw) =>
          raw === null ? { status: 'rejected', path: '', reason: 'message has no value' } : stored[next++]!,
        );
      } catch (error) {
        // Nothing of this part is resolved: it is delivered again, and what was stored of it is a duplicate then.
        await commit().catch(() => undefined);
        throw error;
      }
      const letters: DeadLetter[] = [];
      part.forEach((message, index) => {
        const outcome = outcomes[index]!;
        if (outcome.status !== 'rejected') return;
        letters.push({
          topic: batch.topic,
          partition: batch.partition,
          offset: message.offset,
          key: message.key === null ? null : message.key.toString('utf8'),
          path: outcome.path,
          reason: outcome.reason,
          message: raws[index] === null ? null : deadLetterMessage(raws[index]!).message,
        });
      });
      if (letters.length > 0) {
        try {
          await heartbeating(() => options.deadLetters(letters), heartbeat, heartbeatMs);
        } catch (error) {
          // The part is stored; only the messages before its first reject are fully handled.
          for (let index = 0; index < part.length && outcomes[index]!.status !== 'rejected'; index += 1)
            resolve(part[index]!, outcomes[index]!);
          await commit().catch(() => undefined);
          throw error;
        }
      }
      part.forEach((message, index) => resolve(message, outcomes[index]!));
      await commit();
      await heartbeat();
    }
    await commit();
  };
}

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
    await own.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? DEFAULT_PARTITIONS_CONCURRENTLY,
      eachBatch,
    });
    if (state.status !== 'stopped' && consumer === own) {
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

let negativeTimeoutsQuiet = false;

/**
 * kafkajs 2.2.4 (unmaintained) arms timers with negative delays, e.g. its request
 * queue's "check again once unthrottled" when it never was throttled; Node 24 then prints a
 * TimeoutNegativeWarning on every connection. The delay it means is "as soon as possible", which is
 * what Node does with it, so exactly those warnings — raised from inside kafkajs — are dropped; a
 * negative delay anywhere else still warns.
 */
export function quietKafkajsNegativeTimeouts(): void {
  if (negativeTimeoutsQuiet) return;
  negativeTimeoutsQuiet = true;
  const emitWarning = process.emitWarning;
  process.emitWarning = function emitWarningUnlessKafkajsTimer(
    this: NodeJS.Process,
    ...args: Parameters<typeof process.emitWarning>
  ) {
    const [warning, second] = args as [string | Error, unknown];
    const type =
      typeof second === 'string'
        ? second
        : typeof second === 'object' && second !== null
          ? (second as { type?: unknown }).type
          : undefined;
    const name = type ?? (warning instanceof Error ? warning.name : undefined);
    if (name === 'TimeoutNegativeWarning' && raisedInsideKafkajs()) return;
    emitWarning.apply(this, args);
  } as typeof process.emitWarning;
}

function raisedInsideKafkajs(): boolean {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 30;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  return /[\\/]node_modules[\\/]kafkajs[\\/]/.test(stack);
}

/** Which source topic a message type belongs to (docs/source-messages.md: one topic per message family). */
export function topicFor(type: string): string {
  if (type.startsWith('call.') || type === 'calls.collected') return sourceTopics.calls;
  if (type.startsWith('pulse.')) return sourceTopics.pulse;
  return sourceTopics.projects;
}

/** The partition key that keeps one entity's messages in order: projectId, call id, or beat. */
export function keyFor(message: { type?: unknown; data?: unknown }): string | null {
  const data =
    typeof message.data === 'object' && message.data !== null ? (message.data as Record<string, unknown>) : {};
  const card = typeof data.card === 'object' && data.card !== null ? (data.card as Record<string, unknown>) : {};
  const candidates = [data.projectId, data.callId, message.type === 'call.recorded' ? data.id : undefined, card.beat];
  const key = candidates.find(
    (candidate): candidate is string => typeof candidate === 'string' && candidate.length > 0,
  );
  if (key !== undefined) return key;
  return message.type === 'calls.collected' ? 'calls-collector' : null;
}

export type KafkaFeeder = {
  /**
   * Sends source messages, each to its family's topic with its entity key (or to `topic` when given).
   * A string is sent as it is (e.g. an NDJSON line), routed by the `type` it holds when it is JSON.
   */
  send(messages: readonly (string | { type: string; data?: unknown })[], topic?: string): Promise<void>;
  close(): Promise<void>;
};

/** A producer for tests, tools and feeding sample data into the source topics. */
export async function createKafkaFeeder(
  brokers: readonly string[],
  clientId = 'pulseboard-feeder',
): Promise<KafkaFeeder> {
  quietKafkajsNegativeTimeouts();
  const kafka = new Kafka({ clientId, brokers: [...brokers], logLevel: kafkaLogLevel.WARN });
  // Named explicitly: keys land where Java clients put them, and kafkajs prints no partitioner notice.
  const producer = kafka.producer({ maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  return {
    async send(messages, topic) {
      const byTopic = new Map<string, { key: string | null; value: string }[]>();
      for (const message of messages) {
        let parsed: { type?: unknown; data?: unknown } = {};
        if (typeof message === 'string') {
          try {
            const value: unknown = JSON.parse(message);
            if (typeof value === 'object' && value !== null) parsed = value;
          } catch {
            // Not JSON: sent as is, for ingest to reject.
          }
        } else parsed = message;
        const target = topic ?? topicFor(typeof parsed.type === 'string' ? parsed.type : '');
        const list = byTopic.get(target) ?? [];
        list.push({ key: keyFor(parsed), value: typeof message === 'string' ? message : JSON.stringify(message) });
        byTopic.set(target, list);
      }
      for (const [target, list] of byTopic) await producer.send({ topic: target, acks: -1, messages: list });
    },
    async close() {
      await producer.disconnect();
    },
  };
}
