/**
 * Shared by the real-broker Kafka tests and bench: source messages with known ids, a producer that
 * records where each landed, the event log's message ids, and the group's committed offsets.
 */
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import type { EventLog } from '../../eventstore/port.ts';
import { quietKafkajsNegativeTimeouts } from '../../ingest/kafka/kafka-source.ts';
import { examples } from './examples.ts';

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
