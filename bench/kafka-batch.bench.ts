/**
 * Messages per second through the Kafka source's batch handler (ingest/kafka/kafka-source.ts) with the
 * real ingestor on an embedded event log: one ingestBatch (one EventLog.appendBatch) per Kafka batch,
 * against the way it consumed before, measured in this same run as the baseline: one `ingest` (one
 * EventLog.append) per message, 16 keys at a time, each key in offset order. A server event log answers
 * each call after a network round trip; the "round trip" rows add one timer tick per append or
 * appendBatch call to the embedded log to stand for it. Each row also counts the event-log calls per
 * batch. Absolute numbers depend on the machine.
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
import { createIngestor, type BatchIngestor } from '../ingest/pipeline.ts';
import { examples } from '../test/ingest/examples.ts';

const KEYS = 64;
const MESSAGES = 2_000;

type Figure = { name: string; messages: number; perSecond: number; logCalls: number };

function messages(run: string): KafkaMessage[] {
  return Array.from({ length: MESSAGES }, (_, i) => {
    const projectId = `bench-${run}-${i % KEYS}`;
    const value = JSON.stringify({
      ...examples['vote.cast'],
      id: `bench-${run}-${i}`,
      data: { ...examples['vote.cast'].data, projectId, voterId: `v${i}` },
    });
    return {
      key: Buffer.from(projectId),
      value: Buffer.from(value),
      timestamp: '0',
      attributes: 0,
      offset: String(i),
      headers: {},
    };
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

/** The embedded log counting its write calls, each answered one timer tick later when `roundTrip`. */
function counted(log: EventLog, roundTrip: boolean): { log: EventLog; calls: () => number } {
  let calls = 0;
  return {
    calls: () => calls,
    log: {
      ...log,
      append: async (stream, events, expected) => {
        calls += 1;
        if (roundTrip) await sleep(1);
        return log.append(stream, events, expected);
      },
      appendBatch: async (groups) => {
        calls += 1;
        if (roundTrip) await sleep(1);
        return log.appendBatch(groups);
      },
    },
  };
}

/** How the source consumed before: one ingest per message, `keys` keys at a time, each key in offset order. */
async function perMessage(ingestor: BatchIngestor, batch: readonly KafkaMessage[], keys: number): Promise<number> {
  const lanes = new Map<string, KafkaMessage[]>();
  for (const message of batch) {
    const key = message.key!.toString('latin1');
    lanes.set(key, [...(lanes.get(key) ?? []), message]);
  }
  const queue = [...lanes.values()];
  let rejected = 0;
  await Promise.all(
    Array.from({ length: keys }, async () => {
      for (let lane = queue.shift(); lane; lane = queue.shift()) {
        for (const message of lane)
          if ((await ingestor.ingest(message.value!.toString('utf8'), 'kafka')).status === 'rejected') rejected += 1;
      }
    }),
  );
  return rejected;
}

async function measure(
  name: string,
  base: EventLog,
  roundTrip: boolean,
  mode: 'per message' | 'batch',
): Promise<Figure> {
  const { log, calls } = counted(base, roundTrip);
  const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
  let rejected = 0;
  const eachBatch = createBatchHandler({
    ingestor,
    deadLetters: async (letters) => {
      rejected += letters.length;
    },
  });
  const batch = messages(name.replaceAll(/\W/g, ''));
  const started = process.hrtime.bigint();
  if (mode === 'batch') await eachBatch(payload(batch));
  else rejected += await perMessage(ingestor, batch, 16);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (rejected > 0) throw new Error(`${name}: ${rejected} messages were rejected; the figure would be meaningless`);
  return { name, messages: batch.length, perSecond: batch.length / seconds, logCalls: calls() };
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-bench-kafka-'));
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  try {
    await measure('warm-up', log, false, 'batch');
    const baseline = await measure('embedded, per message', log, false, 'per message');
    const batched = await measure('embedded, one batch', log, false, 'batch');
    const roundTripBaseline = await measure('round trip, per message', log, true, 'per message');
    const roundTripBatched = await measure('round trip, one batch', log, true, 'batch');
    const row = (f: Figure, against: Figure) =>
      `${f.name.padEnd(24)} ${String(f.messages).padStart(6)} messages  ${Math.round(f.perSecond).toLocaleString('en-US').padStart(8)}/s  ` +
      `${String(f.logCalls).padStart(5)} event-log calls  ratio to per message ${(f.perSecond / against.perSecond).toFixed(3)}`;
    console.log(
      `Kafka batch handler, messages/s (${MESSAGES} vote.cast messages over ${KEYS} keys, one batch; per message = 16 keys at a time)`,
    );
    console.log(row(baseline, baseline));
    console.log(row(batched, baseline));
    console.log(row(roundTripBaseline, roundTripBaseline));
    console.log(row(roundTripBatched, roundTripBaseline));
  } finally {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
