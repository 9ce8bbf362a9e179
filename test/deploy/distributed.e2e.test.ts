/**
 * The distributed path end to end, on real servers started by testcontainers:
 * Kafka message → Kafka source → ingestor → KurrentDB event log → projector runner → MongoDB read store.
 *
 * The real ingest pipeline (ingest/pipeline.ts) and projectors are written elsewhere; this test uses a
 * minimal inline ingestor (envelope + zod payload check + deterministic event id + append) and a tiny
 * inline projector, so it proves the adapters and their wiring, not the production folds.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { skipFor } from '../support/skip.ts';
import { Kafka, logLevel } from 'kafkajs';
import { sourceEventId } from '../../events/ids.ts';
import { isSourceType, sourcePayloads } from '../../events/source.ts';
import { streams } from '../../events/streams.ts';
import { createKurrentDbEventLog } from '../../eventstore/kurrentdb/kurrentdb-event-log.ts';
import type { EventLog } from '../../eventstore/port.ts';
import type { DeadLetter, HandledMessage } from '../../ingest/kafka/batch-handler.ts';
import { createKafkaFeeder } from '../../ingest/kafka/feeder.ts';
import { createKafkaSource } from '../../ingest/kafka/kafka-source.ts';
import { defaultDeadLetterTopic, sourceTopics } from '../../ingest/kafka/topics.ts';
import type { BatchIngestor, IngestOutcome, Ingestor } from '../../ingest/pipeline.ts';
import type { Projector } from '../../projectors/projector.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { createMongoReadStore } from '../../readmodels/mongodb/mongodb-read-store.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { skipUnlessDocker, startKafka, startKurrentDb, startMongo } from '../support/containers.ts';

const skip = await skipUnlessDocker('KurrentDB, MongoDB and Kafka');

/** Envelope check, payload check, event id from (type, id), append to the entity's stream. */
function inlineIngestor(log: EventLog): BatchIngestor {
  const ingestor: Ingestor = {
    async ingest(raw): Promise<IngestOutcome> {
      let envelope: { type?: unknown; id?: unknown; at?: unknown; data?: unknown };
      try {
        envelope = JSON.parse(raw) as typeof envelope;
      } catch {
        return { status: 'rejected', path: '', reason: 'not JSON' };
      }
      const { type, id, at } = envelope;
      if (typeof type !== 'string' || !isSourceType(type))
        return { status: 'rejected', path: 'type', reason: 'unknown type' };
      if (typeof id !== 'string' || typeof at !== 'string')
        return { status: 'rejected', path: 'id', reason: 'id and at are required' };
      const parsed = sourcePayloads[type].safeParse(envelope.data);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return { status: 'rejected', path: ['data', ...issue.path].join('.'), reason: issue.message };
      }
      const data = parsed.data as Record<string, unknown>;
      const stream = typeof data.projectId === 'string' ? streams.project(data.projectId) : `e2e-${type}`;
      const result = await log.append(stream, [{ id: sourceEventId(type, id), type, data: { ...data, at } }]);
      if (!result.ok) throw new Error('an append expecting any cannot be refused');
      return result.events.every((e) => e.duplicate) ? { status: 'duplicate' } : { status: 'accepted' };
    },
  };
  return {
    ...ingestor,
    async ingestBatch(raws, source) {
      const outcomes: IngestOutcome[] = [];
      for (const raw of raws) outcomes.push(await ingestor.ingest(raw, source));
      return outcomes;
    },
  };
}

type Board = { id: string; name: string | null; sightings: number };

const boardProjector: Projector<Board, null> = {
  collection: 'e2e_board',
  typePrefixes: ['project.'],
  keyOf: (event) => (event.data as { projectId?: string }).projectId ?? null,
  fold(current, event) {
    const data = event.data as { projectId: string; name?: string | null; handle?: string | null; at: string };
    const previous = current?.doc;
    return {
      doc: { id: data.projectId, name: data.name ?? previous?.name ?? null, sightings: (previous?.sightings ?? 0) + 1 },
      state: null,
      sortKey: current?.sortKey ?? data.at,
      facet: 'visible',
      keys: data.handle ? { handle: [data.handle.toLowerCase()] } : (current?.keys ?? {}),
    };
  },
};

describe('distributed: Kafka → KurrentDB → projector → MongoDB', () => {
  const stops: (() => Promise<void>)[] = [];
  let log: EventLog | undefined;
  let store: ReadStore | undefined;
  let brokers: string[] = [];

  beforeAll(async () => {
    if (skip) return;
    const [kurrent, mongo, kafka] = await Promise.all([startKurrentDb(), startMongo(), startKafka()]);
    stops.push(kurrent.stop, mongo.stop, kafka.stop);
    brokers = kafka.brokers;
    log = createKurrentDbEventLog(kurrent.connectionString);
    store = createMongoReadStore(mongo.url('pulseboard_e2e'));
    const admin = new Kafka({ clientId: 'e2e-admin', brokers, logLevel: logLevel.WARN }).admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [sourceTopics.projects, sourceTopics.calls, defaultDeadLetterTopic].map((topic) => ({
        topic,
        numPartitions: 2,
      })),
    });
    await admin.disconnect();
  });

  afterAll(async () => {
    await log?.close();
    await store?.close();
    for (const stop of stops) await stop();
  });

  it(
    'a produced message is appended once, projected into MongoDB, and a bad one is dead-lettered',
    { ...skipFor(skip), timeout: 300_000 },
    async () => {
      assert.ok(log && store);
      const sighting = {
        type: 'project.sighted',
        id: 'src-1',
        at: '2026-11-20T08:00:00Z',
        data: { projectId: 'p-e2e', handle: 'E2E_Project', name: 'End To End' },
      };
      const badCall = {
        type: 'call.recorded',
        id: 'src-2',
        at: '2026-11-20T08:00:01Z',
        data: { id: 'not-a-uuid', thesisText: 'PRIVATE THESIS TEXT' },
      };

      const handled: HandledMessage[] = [];
      let allHandled: () => void = () => undefined;
      const done = new Promise<void>((resolve) => {
        allHandled = resolve;
      });
      const source = createKafkaSource({
        brokers,
        ingestor: inlineIngestor(log),
        topics: [sourceTopics.projects, sourceTopics.calls],
        groupId: 'e2e-ingest',
        logLevel: 'error',
        onMessage: (message) => {
          handled.push(message);
          if (handled.length === 3) allHandled();
        },
      });
      const feeder = await createKafkaFeeder(brokers);
      try {
        await source.start();
        // The same sighting twice (a redelivery), and one message ingest must reject.
        await feeder.send([sighting, badCall]);
        await feeder.send([JSON.stringify(sighting)]);
        await done;
      } finally {
        await feeder.close();
        await source.stop();
      }

      const outcomes = handled.map((h) => `${h.topic}:${h.outcome.status}`).sort();
      assert.deepEqual(outcomes, [
        `${sourceTopics.calls}:rejected`,
        `${sourceTopics.projects}:accepted`,
        `${sourceTopics.projects}:duplicate`,
      ]);

      const stored = await log.readStream(streams.project('p-e2e'));
      assert.equal(stored.length, 1, 'the redelivered message is stored once');
      assert.equal(stored[0]!.id, sourceEventId('project.sighted', 'src-1'));
      assert.deepEqual(stored[0]!.data, { ...sighting.data, at: sighting.at });

      const runner = createProjectorRunner(log, store, boardProjector as unknown as Projector);
      assert.equal(await runner.catchUp(), 1);
      const projected = await store.get<Board>('e2e_board', 'p-e2e');
      assert.deepEqual(projected?.doc, { id: 'p-e2e', name: 'End To End', sightings: 1 });
      assert.equal(projected?.seq, stored[0]!.position);
      assert.equal(projected?.writtenAt, stored[0]!.recordedAt);
      assert.equal(await store.checkpoint('e2e_board'), stored[0]!.position);
      assert.deepEqual(await store.findIds('e2e_board', 'handle', 'e2e_project', 10), ['p-e2e']);
      assert.equal(await runner.catchUp(), 0, 'a second catch-up finds nothing new');

      const letters = await readDeadLetters(brokers, 1);
      assert.equal(letters.length, 1);
      const [letter] = letters;
      assert.equal(letter!.topic, sourceTopics.calls);
      assert.match(letter!.path, /^data/);
      assert.match(
        (letter!.message as { data: { thesisText: string } }).data.thesisText,
        /^\[withheld: \d+ characters\]$/,
      );
      assert.equal(JSON.stringify(letters).includes('PRIVATE THESIS TEXT'), false);
    },
  );
});

async function readDeadLetters(brokers: string[], count: number): Promise<DeadLetter[]> {
  const kafka = new Kafka({ clientId: 'e2e-dead-letters', brokers, logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({ groupId: 'e2e-dead-letter-reader' });
  const letters: DeadLetter[] = [];
  let enough: () => void = () => undefined;
  const received = new Promise<void>((resolve) => {
    enough = resolve;
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [defaultDeadLetterTopic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value) letters.push(JSON.parse(message.value.toString('utf8')) as DeadLetter);
        if (letters.length >= count) enough();
      },
    });
    await received;
  } finally {
    await consumer.disconnect();
  }
  return letters;
}
