/**
 * The Kafka source against a real Kafka broker (test/support/kafka-broker.ts): a consumer group of
 * two ingest processes, one SIGKILLed mid-stream, and the broker itself SIGKILLed mid-ingest.
 * One broker for the file; its JVM start is most of the file's time.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { createKafkaSource } from '../../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import {
  allCommitted,
  assertCommittedAreStored,
  createLogReader,
  fillTopic,
  groupProgress,
  until,
  useKafkaBroker,
  voteMessages,
} from '../support/kafka-real.ts';
import { skipFor } from '../support/skip.ts';

const real = useKafkaBroker('group');
const { skip, dir } = real;
const CHILD = join(import.meta.dirname, '..', 'support', 'kafka-ingest-child.ts');

type Child = { proc: ChildProcess; handled: () => number };

function startChild(options: Record<string, unknown>): Child {
  const proc = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CHILD, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let handled = 0;
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    const parsed = JSON.parse(line) as { handled?: number };
    if (parsed.handled !== undefined) handled = parsed.handled;
  });
  return { proc, handled: () => handled };
}

async function killed(child: Child): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGKILL');
  await once(child.proc, 'exit');
}

describe('Kafka source on a real broker: a group of processes and crashes', () => {
  it(
    'two processes in one group, one SIGKILLed mid-stream and restarted: 100k messages appended exactly once, offsets committed only after the append',
    { ...skipFor(skip), timeout: 240_000 },
    async () => {
      const topic = 'pb-group';
      const groupId = 'pb-group-ingest';
      const broker = real.broker();
      const messages = voteMessages('g', 100_000);
      const order = await fillTopic(broker, topic, 6, messages);
      assert.equal(order.size, 6, 'the keys spread over all six partitions');

      const eventLog = join(dir, 'group-events.sqlite');
      // A pause before each append of 1000 keeps 100k messages several seconds long, so the kill lands mid-stream.
      const options = {
        brokers: broker.brokers,
        eventLog,
        groupId,
        topics: [topic],
        maxMessagesPerAppend: 1000,
        appendDelayMs: 50,
      };
      const log = createSqliteEventLog(eventLog);
      const reader = createLogReader(log);
      const a = startChild(options);
      let b = startChild(options);
      const children = [a, b];
      try {
        // Mid-stream: both have taken part, and most messages are still to come.
        await until('both processes to handle messages', 120_000, async () =>
          a.handled() > 0 && b.handled() > 0 && a.handled() + b.handled() >= 20_000 ? true : undefined,
        );
        const handledAtKill = a.handled() + b.handled();
        await killed(b);
        // Read committed offsets first, then the log: whatever was committed must already be stored.
        const atKill = await groupProgress(broker.brokers, groupId, topic);
        const storedAtKill = await reader.read();
        const coveredAtKill = assertCommittedAreStored(atKill.committed, order, storedAtKill);
        // The other process goes on meanwhile (it may store the rest before the log is read): judged at the kill.
        assert.ok(handledAtKill < messages.length, 'the process was killed mid-stream');

        b = startChild(options);
        children.push(b);
        const stored = await until('every message in the log', 180_000, async () => {
          const progress = await groupProgress(broker.brokers, groupId, topic);
          const now = await reader.read();
          assertCommittedAreStored(progress.committed, order, now);
          return allCommitted(progress) && now.size === messages.length ? now : undefined;
        });
        assert.ok(coveredAtKill <= messages.length);
        const doubled = [...stored].filter(([, count]) => count !== 1);
        assert.deepEqual(doubled, [], 'every message appended exactly once');
        assert.deepEqual(
          messages.filter((m) => !stored.has(m.id)).map((m) => m.id),
          [],
          'no message lost',
        );
        assert.equal(await log.headPosition(), messages.length, 'the log holds one event per message, nothing more');
      } finally {
        for (const child of children) await killed(child);
        await log.close();
      }
    },
  );

  it(
    'the broker SIGKILLed and restarted mid-ingest: nothing lost, ingest resumes by itself',
    { ...skipFor(skip), timeout: 240_000 },
    async () => {
      const topic = 'pb-broker-crash';
      const groupId = 'pb-broker-crash-ingest';
      const broker = real.broker();
      const messages = voteMessages('b', 15_000);
      const order = await fillTopic(broker, topic, 3, messages);
      const log = createSqliteEventLog(join(dir, 'crash-events.sqlite'));
      const reader = createLogReader(log);
      let handled = 0;
      const statuses: string[] = [];
      const source = createKafkaSource({
        brokers: broker.brokers,
        ingestor: createIngestor(log, { followerProvider: 'followerscope' }),
        topics: [topic],
        groupId,
        logLevel: 'nothing',
        maxMessagesPerAppend: 500,
        restartBaseDelayMs: 200,
        restartMaxDelayMs: 2000,
        retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2000 },
        onMessage: () => (handled += 1),
        onState: (state) => statuses.push(state.status),
      });
      try {
        await source.start();
        await until('ingest under way', 60_000, async () => (handled >= 3000 ? true : undefined), 20);
        await broker.kill();
        const storedAtKill = (await reader.read()).size;
        assert.ok(storedAtKill < messages.length, 'the broker died mid-ingest');
        // What /readyz shows as kafka-ingest.failures: the failed attempts, counted while it retries.
        await until('a failed attempt counted during the outage', 60_000, async () =>
          source.state().failures >= 2 ? true : undefined,
        );
        await broker.start();
        const stored = await until('every message in the log after the broker came back', 180_000, async () => {
          const now = await reader.read();
          if (now.size < messages.length) return undefined;
          const progress = await groupProgress(broker.brokers, groupId, topic);
          assertCommittedAreStored(progress.committed, order, now);
          return allCommitted(progress) ? now : undefined;
        });
        assert.deepEqual(
          [...stored].filter(([, count]) => count !== 1),
          [],
        );
        assert.equal(stored.size, messages.length);
        assert.equal(source.state().status, 'running', `resumed by itself (statuses: ${statuses.join(' > ')})`);
        assert.equal(source.state().failures, 0, 'back in its group, no failure left counted');
      } finally {
        await source.stop();
        await log.close();
      }
    },
  );
});
