/**
 * The Kafka ingest source (docs/architecture.md; docs/source-messages.md, "Kafka"), on kafkajs.
 *
 * A consumer group reads the source topics; each message's value goes to the ingestor, one message
 * at a time in offset order per partition. Offsets are resolved only after the ingestor has appended
 * (or rejected) a message, and committed explicitly (autoCommit off) after each batch and every
 * COMMIT_EVERY messages, so a committed offset never passes a message whose events are not stored.
 * When the ingestor throws (e.g. the event log is down) nothing past the last handled message is
 * resolved: kafkajs retries and restarts the consumer, the messages are delivered again, and their
 * deterministic event ids make the second delivery harmless.
 *
 * A rejected message is written to the dead-letter topic before its offset is resolved, as
 * {topic, partition, offset, key, path, reason, message}, where `message` is the parsed original with
 * every `thesisText` withheld (thesis text never leaves the call-record reads).
 *
 * kafkajs is no longer maintained: it is used against Kafka 3.x brokers (KRaft), which still speak the
 * protocol versions it uses; docker-compose.yml pins apache/kafka:3.9.0.
 */
import { Kafka, logLevel as kafkaLogLevel, type Consumer, type EachBatchPayload, type KafkaMessage, type Producer } from 'kafkajs';
import type { IngestOutcome, Ingestor } from '../pipeline.ts';

export const sourceTopics = {
  projects: 'pulseboard.projects',
  calls: 'pulseboard.calls',
  pulse: 'pulseboard.pulse',
} as const;

export const defaultSourceTopics: readonly string[] = Object.values(sourceTopics);
export const defaultDeadLetterTopic = 'pulseboard.dead-letter';
export const defaultGroupId = 'pulseboard-ingest';

/** Offsets are committed at least this often within a long batch. */
const COMMIT_EVERY = 100;
const WITHHELD = '[withheld]';

export type HandledMessage = { topic: string; partition: number; offset: string; outcome: IngestOutcome };

export type KafkaSourceOptions = {
  brokers: readonly string[];
  ingestor: Ingestor;
  topics?: readonly string[];
  groupId?: string;
  deadLetterTopic?: string;
  clientId?: string;
  /** Where a group without committed offsets starts: the beginning of each topic (default) or its end. */
  fromBeginning?: boolean;
  /** Called after each message is handled (counters, logs). Never receives the message itself. */
  onMessage?: (handled: HandledMessage) => void;
  logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
};

export type KafkaSource = {
  /** Connects, subscribes and starts consuming; resolves once the consumer runs. */
  start(): Promise<void>;
  /** Stops consuming (the current message finishes) and disconnects. */
  stop(): Promise<void>;
};

export type DeadLetter = {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  path: string;
  reason: string;
  /** The original message with every thesisText withheld; null when it was not JSON and might hold thesis text. */
  message: unknown;
};

const levels = {
  nothing: kafkaLogLevel.NOTHING,
  error: kafkaLogLevel.ERROR,
  warn: kafkaLogLevel.WARN,
  info: kafkaLogLevel.INFO,
  debug: kafkaLogLevel.DEBUG,
} as const;

function withholdThesis(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withholdThesis);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, key === 'thesisText' ? WITHHELD : withholdThesis(inner)]),
    );
  }
  return value;
}

/** The dead-letter form of a message value: JSON with thesisText withheld, or the text when it cannot hold any. */
export function deadLetterMessage(raw: string | null): unknown {
  if (raw === null) return null;
  try {
    return withholdThesis(JSON.parse(raw) as unknown);
  } catch {
    return /thesistext/i.test(raw) ? null : raw;
  }
}

function nextOffset(offset: string): string {
  return (BigInt(offset) + 1n).toString();
}

export type BatchHandlerOptions = {
  ingestor: Ingestor;
  /** Stores a rejected message; must not return before it is durably written. */
  deadLetter(letter: DeadLetter): Promise<void>;
  onMessage?: (handled: HandledMessage) => void;
};

/**
 * The per-batch work of the source, apart from kafkajs so its offset handling can be tested:
 * messages in order, each resolved only once handled, offsets committed explicitly.
 */
export function createBatchHandler(options: BatchHandlerOptions): (payload: EachBatchPayload) => Promise<void> {
  async function handle(topic: string, partition: number, message: KafkaMessage): Promise<IngestOutcome> {
    const raw = message.value === null ? null : message.value.toString('utf8');
    const outcome: IngestOutcome =
      raw === null ? { status: 'rejected', path: '', reason: 'message has no value' } : await options.ingestor.ingest(raw, 'kafka');
    if (outcome.status === 'rejected') {
      await options.deadLetter({
        topic,
        partition,
        offset: message.offset,
        key: message.key === null ? null : message.key.toString('utf8'),
        path: outcome.path,
        reason: outcome.reason,
        message: deadLetterMessage(raw),
      });
    }
    return outcome;
  }

  return async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale } = payload;
    let handled: string | undefined;
    let sinceCommit = 0;
    const commit = async () => {
      if (handled === undefined || sinceCommit === 0) return;
      await commitOffsetsIfNecessary({
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: nextOffset(handled) }] }],
      });
      sinceCommit = 0;
    };
    try {
      for (const message of batch.messages) {
        // After a rebalance or stop, leave the rest to whoever owns the partition next.
        if (!isRunning() || isStale()) break;
        // A throw here leaves this message and everything after it uncommitted: they are delivered again.
        const outcome = await handle(batch.topic, batch.partition, message);
        resolveOffset(message.offset);
        handled = message.offset;
        sinceCommit += 1;
        options.onMessage?.({ topic: batch.topic, partition: batch.partition, offset: message.offset, outcome });
        if (sinceCommit >= COMMIT_EVERY) await commit();
        await heartbeat();
      }
    } catch (error) {
      // Keep what was handled before the failure; if even that commit fails, those are redelivered too.
      await commit().catch(() => undefined);
      throw error;
    }
    await commit();
  };
}

export function createKafkaSource(options: KafkaSourceOptions): KafkaSource {
  const topics = [...(options.topics ?? defaultSourceTopics)];
  const deadLetterTopic = options.deadLetterTopic ?? defaultDeadLetterTopic;
  const kafka = new Kafka({
    clientId: options.clientId ?? 'pulseboard-ingest',
    brokers: [...options.brokers],
    logLevel: levels[options.logLevel ?? 'warn'],
  });
  const consumer: Consumer = kafka.consumer({ groupId: options.groupId ?? defaultGroupId });
  const producer: Producer = kafka.producer({ maxInFlightRequests: 1 });

  async function deadLetter(letter: DeadLetter): Promise<void> {
    await producer.send({
      topic: deadLetterTopic,
      acks: -1,
      messages: [{ key: `${letter.topic}:${letter.partition}:${letter.offset}`, value: JSON.stringify(letter) }],
    });
  }

  const eachBatch = createBatchHandler({ ingestor: options.ingestor, deadLetter, onMessage: options.onMessage });

  return {
    async start() {
      await producer.connect();
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: options.fromBeginning ?? true });
      await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
    },

    async stop() {
      await consumer.disconnect();
      await producer.disconnect();
    },
  };
}

/** Which source topic a message type belongs to (docs/source-messages.md: one topic per message family). */
export function topicFor(type: string): string {
  if (type.startsWith('call.') || type === 'calls.collected') return sourceTopics.calls;
  if (type.startsWith('pulse.')) return sourceTopics.pulse;
  return sourceTopics.projects;
}

/** The partition key that keeps one entity's messages in order: projectId, call id, or beat. */
export function keyFor(message: { type?: unknown; data?: unknown }): string | null {
  const data = typeof message.data === 'object' && message.data !== null ? (message.data as Record<string, unknown>) : {};
  const card = typeof data.card === 'object' && data.card !== null ? (data.card as Record<string, unknown>) : {};
  const candidates = [data.projectId, data.callId, message.type === 'call.recorded' ? data.id : undefined, card.beat];
  const key = candidates.find((candidate): candidate is string => typeof candidate === 'string' && candidate.length > 0);
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
export async function createKafkaFeeder(brokers: readonly string[], clientId = 'pulseboard-feeder'): Promise<KafkaFeeder> {
  const kafka = new Kafka({ clientId, brokers: [...brokers], logLevel: kafkaLogLevel.WARN });
  const producer = kafka.producer({ maxInFlightRequests: 1 });
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
