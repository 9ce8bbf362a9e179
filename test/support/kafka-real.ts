/**
 * Shared by the real-broker Kafka tests and bench: one broker per test file with a scratch directory
 * (useKafkaBroker), topics filled with source messages of known ids (fillTopic, recording where each
 * landed), the event log's message ids, and the group's committed offsets checked against them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import type { EventLog } from '../../eventstore/port.ts';
import { quietKafkajsNegativeTimeouts } from '../../ingest/kafka/kafkajs-warnings.ts';
import { examples } from '../ingest/examples.ts';
import { kafkaSkipReason, startKafkaBroker, type KafkaBroker } from './kafka-broker.ts';

export type KafkaTestBroker = {
  /** Why the file's tests cannot run here (they skip), or false. */
  skip: false | string;
  /** A scratch directory for the file's event logs, removed after the file. */
  dir: string;
  /** The broker, started before the file's first test (only when `skip` is false). */
  broker(): KafkaBroker;
};

/** One real broker for a test file (started in beforeAll unless the tests skip) and a scratch directory; both go afterAll. */
export function useKafkaBroker(name: string): KafkaTestBroker {
  const skip = kafkaSkipReason();
  const dir = mkdtempSync(join(tmpdir(), `pb-kafka-${name}-`));
  let broker: KafkaBroker | undefined;
  beforeAll(async () => {
    if (!skip) broker = await startKafkaBroker();
  });
  afterAll(async () => {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    skip,
    dir,
    broker: () => {
      if (!broker) throw new Error('the Kafka broker is not running (tests that need it skip when it cannot)');
      return broker;
    },
  };
}

/** A new topic of `partitions` partitions holding `messages`; answers each partition's message ids in offset order. */
export async function fillTopic(
  broker: KafkaBroker,
  topic: string,
  partitions: number,
  messages: readonly { id: string; key: string | null; value: string }[],
): Promise<Map<number, string[]>> {
  await broker.createTopics([{ topic, partitions }]);
  return produce(broker.brokers, topic, messages);
}

/** `count` valid vote.cast messages over `keys` projects, ids `${run}-${i}`. */
export function voteMessages(run: string, count: number, keys = 500): { id: string; key: string; value: string }[] {
  return Array.from({ length: count }, (_, i) => {
    const projectId = `${run}-p${i % keys}`;
    const id = `${run}-${i}`;
    const data = { ...examples['vote.cast'].data, projectId, voterId: `v${i}` };
    return { id, key: projectId, value: JSON.stringify({ ...examples['vote.cast'], id, data }) };
  });
}

export function kafkaClient(brokers: readonly string[], clientId: string): Kafka {
  quietKafkajsNegativeTimeouts();
  return new Kafka({ clientId, brokers: [...brokers], logLevel: logLevel.NOTHING });
}

/**
 * Produces the messages (in sends of `chunk`), each to its key's partition, and answers each
 * partition's message ids in offset order (from the offsets the broker assigned).
 */
export async function produce(
  brokers: readonly string[],
  topic: string,
  messages: readonly { id: string; key: string | null; value: string }[],
  chunk = 5000,
): Promise<Map<number, string[]>> {
  const producer = kafkaClient(brokers, 'pb-test-producer').producer({
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const byPartition = new Map<number, { offset: bigint; id: string }[]>();
  try {
    for (let start = 0; start < messages.length; start += chunk) {
      const part = messages.slice(start, start + chunk);
      const partitioner = Partitioners.DefaultPartitioner();
      const metadata = await producer.send({
        topic,
        acks: -1,
        messages: part.map(({ key, value }) => ({ key, value })),
      });
      // kafkajs keeps each partition's messages in input order; the broker answers each partition's base offset.
      const partitions = await partitionsOf(brokers, topic);
      const next = new Map(metadata.map((m) => [m.partition, BigInt(m.baseOffset ?? '0')]));
      for (const message of part) {
        const partition = partitioner({
          topic,
          partitionMetadata: partitions,
          message: { key: message.key, value: message.value },
        });
        const offset = next.get(partition)!;
        next.set(partition, offset + 1n);
        const list = byPartition.get(partition) ?? [];
        list.push({ offset, id: message.id });
        byPartition.set(partition, list);
      }
    }
  } finally {
    await producer.disconnect();
  }
  return new Map(
    [...byPartition].map(([partition, list]) => [
      partition,
      list.sort((a, b) => (a.offset < b.offset ? -1 : 1)).map((m) => m.id),
    ]),
  );
}

const partitionCache = new Map<
  string,
  { partitionId: number; leader: number; replicas: number[]; isr: number[]; partitionErrorCode: number }[]
>();

async function partitionsOf(brokers: readonly string[], topic: string) {
  const cached = partitionCache.get(`${brokers.join(',')}/${topic}`);
  if (cached) return cached;
  const admin = kafkaClient(brokers, 'pb-test-admin').admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const partitions = topics[0]!.partitions;
    partitionCache.set(`${brokers.join(',')}/${topic}`, partitions);
    return partitions;
  } finally {
    await admin.disconnect();
  }
}

/** Every message id in the event log (a source message's events carry it in their metadata), with its count. */
export function createLogReader(log: EventLog): { read(): Promise<Map<string, number>> } {
  const counts = new Map<string, number>();
  let after = 0;
  return {
    async read() {
      for (;;) {
        const events = await log.readAll({ afterPosition: after, limit: 10_000 });
        if (events.length === 0) return counts;
        for (const event of events) {
          const id = String(event.metadata.messageId);
          counts.set(id, (counts.get(id) ?? 0) + 1);
          after = event.position;
        }
      }
    },
  };
}

/** The group's committed offset per partition of `topic` (-1: none yet), and each partition's end. */
export async function groupProgress(
  brokers: readonly string[],
  groupId: string,
  topic: string,
): Promise<{ committed: Map<number, number>; ends: Map<number, number> }> {
  const admin = kafkaClient(brokers, 'pb-test-admin').admin();
  await admin.connect();
  try {
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    return {
      committed: new Map(offsets!.partitions.map((p) => [p.partition, Number(p.offset)])),
      ends: new Map(ends.map((p) => [p.partition, Number(p.high)])),
    };
  } finally {
    await admin.disconnect();
  }
}

/** Polls `check` until it returns a value (not undefined), or fails after `timeoutMs` with `what`. */
export async function until<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
  pollMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** True once the group has committed every partition of the topic up to its end, else undefined (for until). */
export function allCommitted(progress: {
  committed: Map<number, number>;
  ends: Map<number, number>;
}): true | undefined {
  return [...progress.ends].every(([partition, end]) => progress.committed.get(partition) === end) ? true : undefined;
}

/**
 * Every partition: each message below the committed offset is in the log (offsets are committed only
 * after the append). Answers how many messages the committed offsets cover.
 */
export function assertCommittedAreStored(
  committed: Map<number, number>,
  order: Map<number, string[]>,
  stored: Map<string, number>,
): number {
  let covered = 0;
  for (const [partition, ids] of order) {
    const offset = committed.get(partition) ?? -1;
    for (let i = 0; i < offset; i += 1)
      assert.ok(stored.has(ids[i]!), `partition ${partition}: offset ${i} (${ids[i]}) committed before it was stored`);
    covered += Math.max(0, offset);
  }
  return covered;
}
