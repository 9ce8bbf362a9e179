import { Kafka, Partitioners, logLevel as kafkaLogLevel } from 'kafkajs';
import { quietKafkajsNegativeTimeouts } from './kafkajs-warnings.ts';
import { keyFor, topicFor } from './topics.ts';

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
