/**
 * The Kafka source against a real Kafka broker (test/support/kafka-broker.ts): an event log slowed
 * past the session timeout, a rebalance while a part is being appended, and a malformed message on
 * its way to the dead-letter topic. One broker for the file.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import type { EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import type { DeadLetter, HandledMessage } from '../../ingest/kafka/batch-handler.ts';
import { createKafkaSource, type KafkaSourceOptions } from '../../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import {
  allCommitted,
  assertCommittedAreStored,
  createLogReader,
  fillTopic,
  groupProgress,
  kafkaClient,
  until,
  useKafkaBroker,
  voteMessages,
} from '../support/kafka-real.ts';
import { skipFor } from '../support/skip.ts';
import { examples } from './examples.ts';

const real = useKafkaBroker('faults');
const { skip, dir } = real;

/** The log with every appendBatch held `delayMs` first, as a slow event log server would. */
function slowed(log: EventLog, delayMs: number, appending?: (busy: boolean) => void): EventLog {
  return {
    ...log,
    appendBatch: async (groups) => {
      appending?.(true);
      try {
        await sleep(delayMs);
        return await log.appendBatch(groups);
      } finally {
        appending?.(false);
      }
    },
  };
}

/** True once the group has committed every partition of `topic` to its end. */
const committedToEnd = async (groupId: string, topic: string) =>
  allCommitted(await groupProgress(real.broker().brokers, groupId, topic));

describe('Kafka source on a real broker: slow appends, rebalances, dead letters', () => {
  const base = (): Pick<KafkaSourceOptions, 'brokers' | 'logLevel' | 'restartBaseDelayMs' | 'restartMaxDelayMs'> => ({
    brokers: real.broker().brokers,
    logLevel: 'nothing',
    restartBaseDelayMs: 200,
    restartMaxDelayMs: 2000,
  });

  it(
    'an event log slowed past the session timeout: heartbeats keep the member, each message is ingested once',
    { ...skipFor(skip), timeout: 120_000 },
    async () => {
      const topic = 'pb-slow';
      const groupId = 'pb-slow-ingest';
      const messages = voteMessages('s', 150);
      await fillTopic(real.broker(), topic, 1, messages);
      const log = createSqliteEventLog(join(dir, 'slow.sqlite'));
      const handled: HandledMessage[] = [];
      const statuses: string[] = [];
      // Each part takes 2.5 times the session timeout to append.
      const source = createKafkaSource({
        ...base(),
        ingestor: createIngestor(slowed(log, 5000), { followerProvider: 'followerscope' }),
        topics: [topic],
        groupId,
        sessionTimeoutMs: 2000,
        heartbeatIntervalMs: 300,
        maxMessagesPerAppend: 100,
        onMessage: (h) => handled.push(h),
        onState: (state) =>
          statuses.push(state.status === 'restarting' ? `restarting (${state.lastError})` : state.status),
      });
      try {
        await source.start();
        await until('every offset committed', 90_000, () => committedToEnd(groupId, topic));
        const outcomes = handled.map((h) => h.outcome.status);
        assert.equal(
          outcomes.length,
          messages.length,
          'no part was delivered twice (an evicted member would see it again)',
        );
        assert.ok(outcomes.every((status) => status === 'accepted'));
        // (A fresh broker's group coordinator may still be loading at the first join: kafkajs retries that.)
        assert.deepEqual(
          statuses.slice(statuses.indexOf('running')),
          ['running'],
          'once in the group, never evicted nor restarted',
        );
        assert.equal((await createLogReader(log).read()).size, messages.length);
      } finally {
        await source.stop();
        await log.close();
      }
    },
  );

  it(
    'a rebalance while a part is being appended: every message stored once, offsets committed only after the append',
    { ...skipFor(skip), timeout: 150_000 },
    async () => {
      const topic = 'pb-rebalance';
      const groupId = 'pb-rebalance-ingest';
      const messages = voteMessages('r', 4000, 64);
      const order = await fillTopic(real.broker(), topic, 4, messages);
      const log = createSqliteEventLog(join(dir, 'rebalance.sqlite'));
      const reader = createLogReader(log);
      let appending = false;
      let handledByA = 0;
      let handledByB = 0;
      const member = (slowMs: number, onMessage: () => void, onBusy?: (busy: boolean) => void) =>
        createKafkaSource({
          ...base(),
          ingestor: createIngestor(slowed(log, slowMs, onBusy), { followerProvider: 'followerscope' }),
          topics: [topic],
          groupId,
          sessionTimeoutMs: 6000,
          heartbeatIntervalMs: 500,
          rebalanceTimeoutMs: 20_000,
          maxMessagesPerAppend: 250,
          onMessage,
        });
      const a = member(
        1500,
        () => (handledByA += 1),
        (busy) => (appending = busy),
      );
      const b = member(0, () => (handledByB += 1));
      try {
        await a.start();
        await until(
          'the first member appending a part',
          60_000,
          async () => (appending && handledByA > 0 ? true : undefined),
          20,
        );
        // The second member joins while the first is inside an append: the group rebalances under it.
        await b.start();
        await until('every offset committed', 120_000, async () => {
          const progress = await groupProgress(real.broker().brokers, groupId, topic);
          assertCommittedAreStored(progress.committed, order, await reader.read());
          return allCommitted(progress);
        });
        const stored = await reader.read();
        assert.equal(stored.size, messages.length, 'every message stored');
        assert.deepEqual(
          [...stored].filter(([, count]) => count !== 1),
          [],
          'each once',
        );
        assert.ok(handledByB > 0, 'the group handed partitions to the member that joined');
        assert.equal(a.state().status, 'running');
        assert.equal(b.state().status, 'running');
      } finally {
        await Promise.all([a.stop(), b.stop()]);
        await log.close();
      }
    },
  );

  it(
    'a malformed message reaches the dead-letter topic with its reason, and its offset is committed',
    { ...skipFor(skip), timeout: 120_000 },
    async () => {
      const topic = 'pb-dlq-source';
      const deadLetterTopic = 'pb-dlq';
      const groupId = 'pb-dlq-ingest';
      await real.broker().createTopics([{ topic: deadLetterTopic, partitions: 1 }]);
      const [good, later] = voteMessages('d', 2);
      const invalid = JSON.stringify({
        ...examples['vote.cast'],
        id: 'd-bad',
        data: { ...examples['vote.cast'].data, direction: 'sideways' },
      });
      const sent = [
        good!,
        { id: 'd-json', key: null, value: 'not json {' },
        { id: 'd-bad', key: 'p', value: invalid },
        later!,
      ];
      await fillTopic(real.broker(), topic, 1, sent);
      const log = createSqliteEventLog(join(dir, 'dlq.sqlite'));
      const source = createKafkaSource({
        ...base(),
        ingestor: createIngestor(log, { followerProvider: 'followerscope' }),
        topics: [topic],
        groupId,
        deadLetterTopic,
      });
      const consumer = kafkaClient(real.broker().brokers, 'pb-dlq-reader').consumer({ groupId: 'pb-dlq-reader' });
      try {
        await source.start();
        await until('every offset committed', 60_000, () => committedToEnd(groupId, topic));
        const letters: DeadLetter[] = [];
        await consumer.connect();
        await consumer.subscribe({ topics: [deadLetterTopic], fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }) =>
            void letters.push(JSON.parse(message.value!.toString('utf8')) as DeadLetter),
        });
        await until('both dead letters', 60_000, async () => (letters.length >= 2 ? true : undefined));
        assert.deepEqual(
          letters.map((l) => [l.topic, l.partition, l.offset]),
          [
            [topic, 0, '1'],
            [topic, 0, '2'],
          ],
        );
        assert.equal(letters[0]!.message, 'not json {');
        assert.match(letters[0]!.reason, /JSON/i);
        assert.equal(letters[1]!.path, 'data.direction');
        assert.ok(letters[1]!.reason.length > 0);
        const stored = await createLogReader(log).read();
        assert.deepEqual(
          [...stored.keys()].sort(),
          [good!.id, later!.id].sort(),
          'the valid messages around them are stored',
        );
      } finally {
        await consumer.disconnect();
        await source.stop();
        await log.close();
      }
    },
  );
});
