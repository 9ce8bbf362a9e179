/**
 * Messages per second through the Kafka source's batch handler (ingest/kafka/kafka-source.ts) with the
 * real ingestor on an embedded event log, one key at a time (how it consumed before: the baseline,
 * measured in this same run) against keys in parallel. A server event log answers each append after a
 * network round trip; the "round trip" rows add one timer tick per append to the embedded log to
 * stand for it, which is where consuming keys in parallel pays. Absolute numbers depend on the machine.
 * Run: node --disable-warning=ExperimentalWarning bench/kafka-batch.bench.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { EventLog } from '../eventstore/port.ts';
import { createSqliteEventLog } from '../eventstore/sqlite/sqlite-event-log.ts';
import { createBatchHandler, sourceTopics } from '../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { examples } from '../test/ingest/examples.ts';

const KEYS = 64;
const MESSAGES = 2_000;

type Figure = { name: string; messages: number; perSecond: number };

function messages(run: string): KafkaMessage[] {
  return Array.from({ length: MESSAGES }, (_, i) => {
    const projectId = `bench-${run}-${i % KEYS}`;
    const value = JSON.stringify({ ...examples['vote.cast'], id: `bench-${run}-${i}`, data: { ...examples['vote.cast'].data, projectId, voterId: `v${i}` } });
    return { key: Buffer.from(projectId), value: Buffer.from(value), timestamp: '0', attributes: 0, offset: String(i), headers: {} };
  });
}

function payload(batch: KafkaMessage[]): EachBatchPayload {
  return {
    batch: {
      topic: sourceTopics.projects,
      partition: 0,
      highWatermark: String(batch.length),
      messages: batch,
      isEmpty: () => batch.length === 0,
      firstOffset: () => batch[0]?.offset ?? null,
      lastOffset: () => batch.at(-1)?.offset ?? '0',
      offsetLag: () => '0',
      offsetLagLow: () => '0',
    },
    resolveOffset: () => undefined,
    heartbeat: async () => undefined,
    pause: () => () => undefined,
    commitOffsetsIfNecessary: async () => undefined,
    uncommittedOffsets: () => ({ topics: [] }),
    isRunning: () => true,
    isStale: () => false,
  };
}

/** The embedded log, each append answered one timer tick later, as a server over a network would. */
function withRoundTrip(log: EventLog): EventLog {
  return {
    ...log,
    append: async (stream, events, expected) => {
      await sleep(1);
      return log.append(stream, events, expected);
    },
  };
}

async function measure(name: string, log: EventLog, keysConcurrently: number): Promise<Figure> {
  const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
  let rejected = 0;
  const eachBatch = createBatchHandler({
    ingestor,
    deadLetter: async () => {
      rejected += 1;
    },
    keysConcurrently,
  });
  const batch = messages(name.replaceAll(/\W/g, ''));
  const started = process.hrtime.bigint();
  await eachBatch(payload(batch));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (rejected > 0) throw new Error(`${name}: ${rejected} messages were rejected; the figure would be meaningless`);
  return { name, messages: batch.length, perSecond: batch.length / seconds };
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-kafka-'));
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  try {
    await measure('warm-up', log, 1);
    const baseline = await measure('embedded, 1 key at a time', log, 1);
    const figures = [
      await measure('embedded, 16 keys', log, 16),
      await measure('round trip, 1 key at a time', withRoundTrip(log), 1),
      await measure('round trip, 16 keys', withRoundTrip(log), 16),
    ];
    const roundTripBaseline = figures[1]!;
    const row = (f: Figure) =>
      `${f.name.padEnd(28)} ${String(f.messages).padStart(6)} messages  ${Math.round(f.perSecond).toLocaleString('en-US').padStart(8)}/s  ` +
      `ratio to embedded 1 key ${(f.perSecond / baseline.perSecond).toFixed(3)}  ratio to round trip 1 key ${(f.perSecond / roundTripBaseline.perSecond).toFixed(3)}`;
    console.log(`Kafka batch handler, messages/s (${MESSAGES} vote.cast messages over ${KEYS} keys, one batch)`);
    console.log(row(baseline));
    for (const figure of figures) console.log(row(figure));
  } finally {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
