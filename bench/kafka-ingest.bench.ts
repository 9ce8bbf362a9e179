/**
 * Kafka ingest from a real broker (test/support/kafka-broker.ts; needs java and mvn): messages/s through
 * the service's ingest into the embedded log against a raw kafkajs consumer of the same 6-partition
 * topic (goal: at least 0.5), from the first batch handed over to the last message handled.
 * Run: node bench/kafka-ingest.bench.ts [--only 20000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventLog } from '../eventstore/sqlite/sqlite-event-log.ts';
import { createKafkaSource } from '../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { fillTopic, kafkaClient, voteMessages } from '../test/support/kafka-real.ts';
import { startKafkaBroker, type KafkaBroker } from '../test/support/kafka-broker.ts';
import { benchSizes } from './dataset.ts';

const PARTITIONS = 6;

type Figure = { messages: number; seconds: number; perSecond: number };

function figure(messages: number, first: bigint, last: bigint): Figure {
  const seconds = Number(last - first) / 1e9;
  return { messages, seconds, perSecond: messages / seconds };
}

/** A raw kafkajs consumer in a group of its own: counts what it is handed, commits as kafkajs does by default. */
async function rawConsumer(broker: KafkaBroker, topic: string, count: number): Promise<Figure> {
  const consumer = kafkaClient(broker.brokers, 'pb-bench-raw').consumer({ groupId: `${topic}-raw` });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let seen = 0;
  let first = 0n;
  const done = new Promise<bigint>((resolve) => {
    void consumer.run({
      partitionsConsumedConcurrently: 4,
      eachBatch: async ({ batch }) => {
        if (seen === 0) first = process.hrtime.bigint();
        seen += batch.messages.length;
        if (seen >= count) resolve(process.hrtime.bigint());
      },
    });
  });
  const last = await done;
  await consumer.disconnect();
  return figure(count, first, last);
}

/** The service's Kafka ingest into a fresh embedded event log. */
async function serviceIngest(broker: KafkaBroker, topic: string, count: number, dir: string): Promise<Figure> {
  const log = createSqliteEventLog(join(dir, `${topic}.sqlite`));
  let handled = 0;
  let rejected = 0;
  let first = 0n;
  const done = Promise.withResolvers<bigint>();
  const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
  const source = createKafkaSource({
    brokers: broker.brokers,
    ingestor: {
      // The clock starts when the first part reaches the ingestor, not at the first onMessage: that one
      // comes after the append, and the parts of the other partitions handed over meanwhile would be free.
      ingestBatch: (raws, from) => {
        if (first === 0n) first = process.hrtime.bigint();
        return ingestor.ingestBatch(raws, from);
      },
    },
    topics: [topic],
    groupId: `${topic}-ingest`,
    logLevel: 'nothing',
    onMessage: ({ outcome }) => {
      handled += 1;
      if (outcome.status === 'rejected') rejected += 1;
      if (handled === count) done.resolve(process.hrtime.bigint());
    },
  });
  await source.start();
  const last = await done.promise;
  await source.stop();
  await log.close();
  if (rejected > 0) throw new Error(`${rejected} messages were rejected; the figure would be meaningless`);
  return figure(count, first, last);
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-kafka-ingest-'));
  const broker = await startKafkaBroker({ quickStart: false });
  try {
    console.log(
      `Kafka ingest from a real broker (Kafka ${broker.version}, ${PARTITIONS} partitions), messages/s from the first message to the last`,
    );
    for (const size of benchSizes([20_000, 100_000])) {
      const topic = `bench-${size}`;
      await fillTopic(broker, topic, PARTITIONS, voteMessages(`bench${size}`, size));
      const raw = await rawConsumer(broker, topic, size);
      const ingest = await serviceIngest(broker, topic, size, dir);
      const row = (name: string, f: Figure) =>
        `${name.padEnd(34)} ${String(f.messages).padStart(7)} messages  ${f.seconds.toFixed(2).padStart(7)} s  ${Math.round(f.perSecond).toLocaleString('en-US').padStart(9)}/s`;
      console.log(row('raw kafkajs consumer (baseline)', raw));
      console.log(
        `${row('service ingest (embedded log)', ingest)}  ratio ${(ingest.perSecond / raw.perSecond).toFixed(3)} (goal >= 0.5)`,
      );
    }
  } finally {
    await broker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
