import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it, vi } from 'vitest';
import {
  Kafka,
  type ConsumerRunConfig,
  type EachBatchPayload,
  type KafkaMessage,
  type OffsetsByTopicPartition,
  type ProducerRecord,
} from 'kafkajs';
import { createBatchHandler, type DeadLetter, type HandledMessage } from '../../ingest/kafka/batch-handler.ts';
import {
  createKafkaSource,
  restartDelay,
  type KafkaSourceOptions,
  type KafkaSourceState,
  type SourceConsumer,
  type SourceProducer,
} from '../../ingest/kafka/kafka-source.ts';
import { keyFor, sourceTopics, topicFor } from '../../ingest/kafka/topics.ts';
import { deadLetterMessage } from '../../ingest/dead-letter-message.ts';
import { createIngestor, type BatchIngestor, type IngestOutcome } from '../../ingest/pipeline.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { streams } from '../../events/streams.ts';
import { examples, THESIS_HIDING_MESSAGES } from './examples.ts';
import { tempLog } from './helpers.ts';

function message(offset: number, value: string | null, key: string | null = null): KafkaMessage {
  return {
    key: key === null ? null : Buffer.from(key),
    value: value === null ? null : Buffer.from(value),
    timestamp: '0',
    attributes: 0,
    offset: String(offset),
    headers: {},
  };
}

type Recorded = { resolved: string[]; commits: OffsetsByTopicPartition[]; heartbeats: number };

function payload(messages: KafkaMessage[], recorded: Recorded, running: () => boolean = () => true): EachBatchPayload {
  const last = messages[messages.length - 1]?.offset ?? '0';
  return {
    batch: {
      topic: sourceTopics.calls,
      partition: 2,
      highWatermark: String(Number(last) + 1),
      messages,
      isEmpty: () => messages.length === 0,
      firstOffset: () => messages[0]?.offset ?? null,
      lastOffset: () => last,
      offsetLag: () => '0',
      offsetLagLow: () => '0',
    },
    resolveOffset: (offset) => {
      recorded.resolved.push(offset);
    },
    heartbeat: async () => {
      recorded.heartbeats += 1;
    },
    pause: () => () => undefined,
    commitOffsetsIfNecessary: async (offsets) => {
      assert.ok(offsets, 'offsets are always committed explicitly');
      recorded.commits.push(offsets);
    },
    uncommittedOffsets: () => ({ topics: [] }),
    isRunning: running,
    isStale: () => false,
  };
}

/**
 * An ingestor answering from a script keyed by the raw value, recording every ingestBatch call;
 * 'THROW' anywhere in a call simulates the event log being down for that whole batch.
 */
function scriptedIngestor(
  answers: Record<string, IngestOutcome | 'THROW'>,
): Pick<BatchIngestor, 'ingestBatch'> & { seen: string[]; calls: string[][] } {
  const seen: string[] = [];
  const calls: string[][] = [];
  return {
    seen,
    calls,
    async ingestBatch(raws, source) {
      assert.equal(source, 'kafka');
      calls.push([...raws]);
      seen.push(...raws);
      return raws.map((raw) => {
        const answer = answers[raw];
        if (answer === undefined) throw new Error(`unexpected message ${raw}`);
        if (answer === 'THROW') throw new Error('event log unavailable');
        return answer;
      });
    },
  };
}

const committedOffset = (commit: OffsetsByTopicPartition | undefined) => commit?.topics[0]?.partitions[0]?.offset;

describe('Kafka source: batch handling', () => {
  it('hands the whole batch to one ingestBatch call in offset order, resolves each once stored, and commits the next offset once', async () => {
    const ingestor = scriptedIngestor({
      a: { status: 'accepted' },
      b: { status: 'duplicate' },
      c: { status: 'accepted' },
    });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const handled: HandledMessage[] = [];
    const letters: DeadLetter[][] = [];
    const eachBatch = createBatchHandler({
      ingestor,
      deadLetters: async (sent) => {
        letters.push([...sent]);
      },
      onMessage: (h) => handled.push(h),
    });
    await eachBatch(payload([message(10, 'a', 'A'), message(11, 'b', 'B'), message(12, 'c', 'A')], recorded));
    assert.deepEqual(ingestor.calls, [['a', 'b', 'c']], 'one ingestBatch call for the batch, in offset order');
    assert.deepEqual(recorded.resolved, ['10', '11', '12']);
    assert.deepEqual(recorded.commits, [
      { topics: [{ topic: sourceTopics.calls, partitions: [{ partition: 2, offset: '13' }] }] },
    ]);
    assert.deepEqual(
      handled.map((h) => [h.offset, h.outcome.status]),
      [
        ['10', 'accepted'],
        ['11', 'duplicate'],
        ['12', 'accepted'],
      ],
    );
    assert.deepEqual(letters, [], 'no dead-letter send without a reject');
  });

  it('dead-letters the rejected messages of a batch in one send, with coordinates and reason, thesis text withheld', async () => {
    const call = JSON.stringify({
      type: 'call.recorded',
      id: 'm-1',
      at: '2026-11-20T08:00:00Z',
      data: { id: 'x', thesisText: 'SECRET THESIS' },
    });
    const ingestor = scriptedIngestor({
      [call]: { status: 'rejected', path: 'data.id', reason: 'Invalid UUID' },
      ok: { status: 'accepted' },
    });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const sends: DeadLetter[][] = [];
    const eachBatch = createBatchHandler({
      ingestor,
      deadLetters: async (sent) => {
        sends.push([...sent]);
      },
    });
    await eachBatch(payload([message(5, call, 'x'), message(6, null), message(7, 'ok')], recorded));
    // Through JSON, as the producer sends them (the withheld copy has no prototype).
    assert.deepEqual(JSON.parse(JSON.stringify(sends)), [
      [
        {
          topic: sourceTopics.calls,
          partition: 2,
          offset: '5',
          key: 'x',
          path: 'data.id',
          reason: 'Invalid UUID',
          message: {
            type: 'call.recorded',
            id: 'm-1',
            at: '2026-11-20T08:00:00Z',
            data: { id: 'x', thesisText: '[withheld: 13 characters]' },
          },
        },
        {
          topic: sourceTopics.calls,
          partition: 2,
          offset: '6',
          key: null,
          path: '',
          reason: 'message has no value',
          message: null,
        },
      ],
    ]);
    assert.equal(JSON.stringify(sends).includes('SECRET'), false);
    assert.deepEqual(ingestor.calls, [[call, 'ok']], 'a message without a value never reaches the ingestor');
    assert.deepEqual(recorded.resolved, ['5', '6', '7']);
    assert.deepEqual(recorded.commits.map(committedOffset), ['8']);
  });

  it('on an ingest failure resolves and commits nothing of that batch and rethrows, so all of it is redelivered', async () => {
    const ingestor = scriptedIngestor({ a: { status: 'accepted' }, b: 'THROW', c: { status: 'accepted' } });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({ ingestor, deadLetters: async () => assert.fail('nothing is rejected') });
    await assert.rejects(
      eachBatch(payload([message(20, 'a'), message(21, 'b'), message(22, 'c')], recorded)),
      /event log unavailable/,
    );
    assert.deepEqual(ingestor.calls, [['a', 'b', 'c']]);
    assert.deepEqual(recorded.resolved, []);
    assert.deepEqual(recorded.commits, []);
  });

  it('when the dead letters cannot be written, resolves only the stored messages before the first reject', async () => {
    const ingestor = scriptedIngestor({
      ok: { status: 'accepted' },
      bad: { status: 'rejected', path: 'type', reason: 'unknown type' },
      later: { status: 'accepted' },
    });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({
      ingestor,
      deadLetters: async () => {
        throw new Error('dead-letter topic unavailable');
      },
    });
    await assert.rejects(
      eachBatch(payload([message(2, 'ok'), message(3, 'bad'), message(4, 'later')], recorded)),
      /dead-letter topic unavailable/,
    );
    assert.deepEqual(recorded.resolved, ['2']);
    assert.deepEqual(recorded.commits.map(committedOffset), ['3']);
  });

  it('splits a batch longer than maxMessagesPerAppend into parts, one ingestBatch and one commit each, and stops between parts', async () => {
    const values = Array.from({ length: 250 }, (_, i) => `m${i}`);
    const ingestor = scriptedIngestor(Object.fromEntries(values.map((v) => [v, { status: 'accepted' as const }])));
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({ ingestor, deadLetters: async () => undefined, maxMessagesPerAppend: 100 });
    await eachBatch(
      payload(
        values.map((v, i) => message(1000 + i, v, `k${i % 7}`)),
        recorded,
      ),
    );
    assert.deepEqual(
      ingestor.calls.map((call) => call.length),
      [100, 100, 50],
    );
    assert.deepEqual(ingestor.seen, values, 'offset order across parts');
    assert.deepEqual(recorded.commits.map(committedOffset), ['1100', '1200', '1250']);
    assert.equal(recorded.heartbeats, 3);

    let running = true;
    const stopping = scriptedIngestor(Object.fromEntries(values.map((v) => [v, { status: 'accepted' as const }])));
    const stopped: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const stopAfterFirst = createBatchHandler({
      ingestor: stopping,
      deadLetters: async () => undefined,
      maxMessagesPerAppend: 100,
      onMessage: () => {
        running = false;
      },
    });
    await stopAfterFirst(
      payload(
        values.map((v, i) => message(1000 + i, v)),
        stopped,
        () => running,
      ),
    );
    assert.deepEqual(
      stopping.calls.map((call) => call.length),
      [100],
      'no new part once the consumer stops running',
    );
    assert.deepEqual(stopped.commits.map(committedOffset), ['1100']);
  });

  it('heartbeats every interval while a slow part is appended, so a slow event log cannot outlast the session', async () => {
    let appending = false;
    let duringAppend = 0;
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const base = payload([message(0, 'a'), message(1, 'b')], recorded);
    const slow: Pick<BatchIngestor, 'ingestBatch'> = {
      async ingestBatch(raws) {
        appending = true;
        await new Promise((resolve) => setTimeout(resolve, 200));
        appending = false;
        return raws.map(() => ({ status: 'accepted' as const }));
      },
    };
    const eachBatch = createBatchHandler({
      ingestor: slow,
      deadLetters: async () => undefined,
      heartbeatIntervalMs: 20,
    });
    await eachBatch({
      ...base,
      heartbeat: async () => {
        if (appending) duringAppend += 1;
        recorded.heartbeats += 1;
      },
    });
    assert.ok(duringAppend >= 3, `heartbeats while the part was appended: ${duringAppend}`);
    assert.deepEqual(recorded.commits.map(committedOffset), ['2']);
  });

  it('a heartbeat failing while a part is appended does not lose the part: it is stored and committed', async () => {
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const base = payload([message(7, 'a')], recorded);
    let failed = 0;
    const slow: Pick<BatchIngestor, 'ingestBatch'> = {
      async ingestBatch(raws) {
        await new Promise((resolve) => setTimeout(resolve, 80));
        return raws.map(() => ({ status: 'accepted' as const }));
      },
    };
    const eachBatch = createBatchHandler({
      ingestor: slow,
      deadLetters: async () => undefined,
      heartbeatIntervalMs: 10,
    });
    let appended = false;
    await eachBatch({
      ...base,
      resolveOffset: (offset) => {
        appended = true;
        recorded.resolved.push(offset);
      },
      heartbeat: async () => {
        if (appended) return;
        failed += 1;
        throw new Error('The group is rebalancing');
      },
    });
    assert.ok(failed >= 2, 'heartbeats were tried during the append');
    assert.deepEqual(recorded.resolved, ['7']);
    assert.deepEqual(recorded.commits.map(committedOffset), ['8']);
  });

  it('makes one ingestBatch call, one event-log appendBatch and at most one dead-letter send per batch (the real ingestor on SQLite)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-kafka-'));
    const inner = createSqliteEventLog(join(dir, 'events.sqlite'));
    try {
      const calls = { append: 0, appendBatch: 0 };
      const log: EventLog = {
        ...inner,
        append: (...args) => {
          calls.append += 1;
          return inner.append(...args);
        },
        appendBatch: (groups) => {
          calls.appendBatch += 1;
          return inner.appendBatch(groups);
        },
      };
      const ingestor = createIngestor(log, { followerProvider: 'followerscope' });
      let ingestBatches = 0;
      let sends = 0;
      const eachBatch = createBatchHandler({
        ingestor: {
          ingestBatch: (raws, source) => {
            ingestBatches += 1;
            return ingestor.ingestBatch(raws, source);
          },
        },
        deadLetters: async () => {
          sends += 1;
        },
      });
      const votes = Array.from({ length: 300 }, (_, i) => {
        const projectId = `kafka-${i % 12}`;
        const value = JSON.stringify({
          ...examples['vote.cast'],
          id: `kafka-${i}`,
          data: { ...examples['vote.cast'].data, projectId, voterId: `v${i}` },
        });
        return message(i, value, projectId);
      });
      const batch = [...votes, message(300, 'not json'), message(301, '{"type":"nope"}')];
      const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
      await eachBatch(payload(batch, recorded));
      assert.deepEqual(
        { ingestBatches, ...calls, sends },
        { ingestBatches: 1, append: 0, appendBatch: 1, sends: 1 },
        '302 messages, 12 keys',
      );
      assert.deepEqual(recorded.commits.map(committedOffset), ['302']);
      // A crash after the append and before the commit: the batch comes again and re-appending stores nothing.
      const head = await inner.headPosition();
      const again: HandledMessage[] = [];
      const redeliver = createBatchHandler({
        ingestor,
        deadLetters: async () => undefined,
        onMessage: (h) => again.push(h),
      });
      await redeliver(payload(batch, { resolved: [], commits: [], heartbeats: 0 }));
      assert.equal(await inner.headPosition(), head);
      assert.deepEqual(new Set(again.map((h) => h.outcome.status)), new Set(['duplicate', 'rejected']));
      // Each key's events in offset order in its stream.
      const stream = await inner.readStream(streams.project('kafka-5'));
      assert.deepEqual(
        stream.map((event) => (event.data as { voterId: string }).voterId),
        votes.filter((_, i) => i % 12 === 5).map((_, k) => `v${5 + 12 * k}`),
      );
    } finally {
      await inner.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Kafka source: routing and dead-letter form', () => {
  it('routes each message family to its topic and keys it by its entity', () => {
    assert.equal(topicFor('project.sighted'), sourceTopics.projects);
    assert.equal(topicFor('dossier.written'), sourceTopics.projects);
    assert.equal(topicFor('call.recorded'), sourceTopics.calls);
    assert.equal(topicFor('call.suppressed'), sourceTopics.calls);
    assert.equal(topicFor('calls.collected'), sourceTopics.calls);
    assert.equal(topicFor('pulse.published'), sourceTopics.pulse);
    assert.equal(keyFor({ type: 'project.sighted', data: { projectId: 'p-1' } }), 'p-1');
    assert.equal(keyFor({ type: 'call.recorded', data: { id: 'c-1' } }), 'c-1');
    assert.equal(keyFor({ type: 'call.restored', data: { callId: 'c-2' } }), 'c-2');
    assert.equal(keyFor({ type: 'pulse.published', data: { card: { beat: 'defi' } } }), 'defi');
    assert.equal(keyFor({ type: 'calls.collected', data: {} }), 'calls-collector');
    assert.equal(keyFor({ type: 'project.sighted', data: 'nonsense' }), null);
  });

  it('sends deep, escaped and unparseable messages to the dead-letter topic without their thesis', async () => {
    const { log, cleanup } = tempLog();
    const fake = fakeClients();
    try {
      const source = createKafkaSource({
        brokers: ['unused:9092'],
        ingestor: createIngestor(log, { followerProvider: 'followerscope' }),
        clients: fake.clients,
        schedule: fake.schedule,
      });
      await source.start();
      const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
      const batch = THESIS_HIDING_MESSAGES.map((raw, offset) => message(offset, raw));
      await fake.consumers[0]!.runConfig!.eachBatch!(payload(batch, recorded));
      await source.stop();
      const values = fake.sent.flatMap((record) => record.messages.map((m) => String(m.value)));
      assert.equal(values.length, THESIS_HIDING_MESSAGES.length);
      for (const [offset, value] of values.entries()) {
        const letter = JSON.parse(value) as DeadLetter;
        assert.equal(letter.offset, String(offset));
        assert.equal(
          JSON.stringify(letter.message),
          JSON.stringify(deadLetterMessage(THESIS_HIDING_MESSAGES[offset]!).message),
        );
        assert.doesNotMatch(value, /SECRET/);
      }
    } finally {
      await cleanup();
    }
  });
});

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

type Listener = (event: { payload: { error: Error; groupId: string; restart: boolean } }) => void;

/** kafkajs consumers as the source sees them, recording what it asked of each. */
function fakeClients(
  options: {
    failConnect?: (n: number) => boolean;
    connectGate?: Promise<void> | ((n: number) => Promise<void> | undefined);
    /** As kafkajs does when the join fails: run() reports the crash, then resolves. */
    failJoin?: (n: number) => boolean;
  } = {},
) {
  const consumers: {
    listeners: Map<string, Listener[]>;
    runConfig?: ConsumerRunConfig;
    disconnected: boolean;
    emit(event: string, payload?: unknown): void;
  }[] = [];
  const scheduled: { run: () => void; delayMs: number; cancelled: boolean }[] = [];
  const sent: ProducerRecord[] = [];
  const events = { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' };
  const clients = {
    consumer(): SourceConsumer {
      const n = consumers.length;
      const record = {
        listeners: new Map<string, Listener[]>(),
        runConfig: undefined as ConsumerRunConfig | undefined,
        disconnected: false,
        emit(event: string, payload?: unknown) {
          for (const listener of record.listeners.get(event) ?? []) listener({ payload } as Parameters<Listener>[0]);
        },
      };
      consumers.push(record);
      return {
        events,
        on: ((event: string, listener: Listener) => {
          record.listeners.set(event, [...(record.listeners.get(event) ?? []), listener]);
          return () => undefined;
        }) as unknown as SourceConsumer['on'],
        connect: async () => {
          await (typeof options.connectGate === 'function' ? options.connectGate(n) : options.connectGate);
          if (options.failConnect?.(n)) throw new Error('broker unreachable');
        },
        subscribe: async () => undefined,
        run: async (config?: ConsumerRunConfig) => {
          record.runConfig = config;
          if (options.failJoin?.(n))
            record.emit(events.CRASH, { error: new Error('The coordinator is loading'), groupId: 'g', restart: true });
        },
        disconnect: async () => {
          record.disconnected = true;
        },
      } as unknown as SourceConsumer;
    },
    producer(): SourceProducer {
      return {
        connect: async () => undefined,
        disconnect: async () => undefined,
        send: async (record: ProducerRecord) => {
          sent.push(record);
          return [];
        },
      } as unknown as SourceProducer;
    },
  };
  const schedule = (run: () => void, delayMs: number) => {
    const entry = { run, delayMs, cancelled: false };
    scheduled.push(entry);
    return () => {
      entry.cancelled = true;
    };
  };
  return { clients, consumers, scheduled, schedule, events, sent };
}

const ingestorNeverCalled: Pick<BatchIngestor, 'ingestBatch'> = {
  ingestBatch: async () => assert.fail('no message in these tests'),
};

/** A source on fake clients that never hands a message to its ingestor, with any further options. */
const idleSource = (fake: ReturnType<typeof fakeClients>, more: Partial<KafkaSourceOptions> = {}) =>
  createKafkaSource({
    brokers: ['unused:9092'],
    ingestor: ingestorNeverCalled,
    clients: fake.clients,
    schedule: fake.schedule,
    ...more,
  });

describe('Kafka source: consumer supervision', () => {
  it('runs partitions concurrently with explicit commits', async () => {
    const fake = fakeClients();
    const source = idleSource(fake);
    await source.start();
    const config = fake.consumers[0]!.runConfig!;
    assert.equal(config.autoCommit, false);
    assert.equal(config.eachBatchAutoResolve, false);
    assert.ok((config.partitionsConsumedConcurrently ?? 1) > 1, 'more than one partition at a time');
    assert.equal(source.state().status, 'running');
    await source.stop();
    assert.equal(source.state().status, 'stopped');
  });

  it('per batch kafkajs hands over: one ingestBatch call, one dead-letter send for all its rejects, one offset commit', async () => {
    const fake = fakeClients();
    const ingestor = scriptedIngestor({
      a: { status: 'accepted' },
      bad1: { status: 'rejected', path: 'type', reason: 'unknown type' },
      b: { status: 'duplicate' },
      bad2: { status: 'rejected', path: 'id', reason: 'id is required' },
    });
    const source = createKafkaSource({
      brokers: ['unused:9092'],
      ingestor,
      clients: fake.clients,
      schedule: fake.schedule,
      deadLetterTopic: 'dlq',
    });
    await source.start();
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    await fake.consumers[0]!.runConfig!.eachBatch!(
      payload([message(0, 'a', 'A'), message(1, 'bad1', 'B'), message(2, 'b', 'A'), message(3, 'bad2', 'C')], recorded),
    );
    assert.deepEqual(ingestor.calls, [['a', 'bad1', 'b', 'bad2']]);
    assert.deepEqual(
      fake.sent.map((record) => [record.topic, record.acks, record.messages.map((m) => m.key)]),
      [['dlq', -1, [`${sourceTopics.calls}:2:1`, `${sourceTopics.calls}:2:3`]]],
    );
    assert.deepEqual(recorded.commits.map(committedOffset), ['4']);
    await source.stop();
  });

  it('starts a new consumer after a crash kafkajs will not restart, with capped exponential backoff, and reports each state', async () => {
    const fake = fakeClients({ failConnect: (n) => n >= 1 && n <= 5 });
    const states: KafkaSourceState['status'][] = [];
    const source = idleSource(fake, {
      random: () => 0.5,
      restartBaseDelayMs: 1_000,
      restartMaxDelayMs: 8_000,
      onState: (state) => states.push(state.status),
    });
    await source.start();
    fake.consumers[0]!.emit(fake.events.CRASH, {
      error: Object.assign(new Error('The group is rebalancing'), { name: 'KafkaJSProtocolError' }),
      groupId: 'g',
      restart: false,
    });
    assert.equal(source.state().status, 'restarting');
    assert.equal(source.state().lastError, 'KafkaJSProtocolError: The group is rebalancing');
    // The broker stays away for five attempts: each failed start schedules the next, further out.
    for (let attempt = 0; attempt < 6; attempt += 1) {
      assert.equal(fake.scheduled.length, attempt + 1);
      fake.scheduled[attempt]!.run();
      await settle();
    }
    // Ceilings 1, 2, 4, then 8 s (the cap); with random 0.5 each delay is three quarters of its ceiling.
    assert.deepEqual(
      fake.scheduled.map((s) => s.delayMs),
      [750, 1_500, 3_000, 6_000, 6_000, 6_000],
    );
    assert.equal(fake.consumers.length, 7, 'a fresh consumer for every attempt');
    assert.equal(fake.consumers[0]!.disconnected, true, 'what is left of the crashed consumer is released');
    assert.equal(source.state().status, 'running');
    assert.equal(source.state().restarts, 6);
    assert.deepEqual(states, ['starting', 'joining', 'running', 'restarting', 'joining', 'running']);
    // Back in service, the next crash starts from the base delay again.
    fake.consumers[6]!.emit(fake.events.CRASH, { error: new Error('boom'), groupId: 'g', restart: false });
    assert.equal(fake.scheduled.at(-1)!.delayMs, 750);
    await source.stop();
    assert.equal(fake.scheduled.at(-1)!.cancelled, true, 'stop cancels a pending restart');
  });

  it('a join that fails is not running: run() resolving after the crash leaves it restarting until the group lets it in', async () => {
    const fake = fakeClients({ failJoin: (n) => n === 0 });
    const states: KafkaSourceState['status'][] = [];
    const source = idleSource(fake, {
      onState: (state) => states.push(state.status),
    });
    await source.start();
    assert.equal(source.state().status, 'restarting');
    fake.consumers[0]!.emit(fake.events.GROUP_JOIN, {});
    assert.equal(source.state().status, 'running');
    assert.deepEqual(states, ['starting', 'joining', 'restarting', 'running']);
    await source.stop();
  });

  it('leaves a crash kafkajs restarts itself to kafkajs, and is running again when the consumer rejoins its group', async () => {
    const fake = fakeClients();
    const source = idleSource(fake);
    await source.start();
    fake.consumers[0]!.emit(fake.events.CRASH, { error: new Error('connection lost'), groupId: 'g', restart: true });
    assert.equal(source.state().status, 'restarting');
    assert.equal(fake.scheduled.length, 0);
    fake.consumers[0]!.emit(fake.events.GROUP_JOIN, {});
    assert.equal(source.state().status, 'running');
    assert.equal(source.state().restarts, 0);
    await source.stop();
  });

  it('counts every failed attempt while the broker is away, kafkajs restarts included, and clears the count once back in its group', async () => {
    const fake = fakeClients({ failConnect: (n) => n === 1 || n === 2 });
    const source = idleSource(fake);
    await source.start();
    assert.equal(source.state().failures, 0);
    // An outage kafkajs rides out itself: each of its restarts that fails crashes again.
    for (let crash = 1; crash <= 3; crash += 1) {
      fake.consumers[0]!.emit(fake.events.CRASH, { error: new Error('connection lost'), groupId: 'g', restart: true });
      assert.deepEqual([source.state().status, source.state().failures], ['restarting', crash]);
    }
    assert.equal(source.state().restarts, 0, 'none of them a restart of the source');
    fake.consumers[0]!.emit(fake.events.GROUP_JOIN, {});
    assert.deepEqual([source.state().status, source.state().failures], ['running', 0]);
    // A crash kafkajs gives up on, then two failed starts of the source's own.
    fake.consumers[0]!.emit(fake.events.CRASH, { error: new Error('boom'), groupId: 'g', restart: false });
    assert.equal(source.state().failures, 1);
    for (const [attempt, failures] of [2, 3].entries()) {
      fake.scheduled[attempt]!.run();
      await settle();
      assert.deepEqual([source.state().status, source.state().failures], ['restarting', failures]);
    }
    fake.scheduled[2]!.run();
    await settle();
    assert.deepEqual([source.state().status, source.state().failures, source.state().restarts], ['running', 0, 3]);
    await source.stop();
  });

  it('a consumer still connecting when the source stops never starts consuming', async () => {
    const gate = deferred<void>();
    const fake = fakeClients({ connectGate: gate.promise });
    const source = idleSource(fake);
    const starting = source.start();
    await settle();
    const stopping = source.stop();
    gate.resolve();
    await Promise.all([starting, stopping]);
    assert.equal(fake.consumers[0]!.runConfig, undefined, 'run was never called');
    assert.equal(fake.consumers[0]!.disconnected, true);
    assert.equal(source.state().status, 'stopped');
  });

  it('start({retry}) with the broker down never rejects: it reports restarting with the cause, and runs once a consumer connects', async () => {
    const fake = fakeClients({ failConnect: (n) => n === 0 });
    const source = idleSource(fake, {
      random: () => 0,
    });
    await source.start({ retry: true });
    assert.equal(source.state().status, 'restarting');
    assert.equal(source.state().lastError, 'Error: broker unreachable');
    assert.equal(fake.scheduled.length, 1);
    fake.scheduled[0]!.run();
    await settle();
    assert.equal(source.state().status, 'running');
    assert.equal(source.state().restarts, 1);
    await source.stop();
    // Without retry the first failure is the caller's.
    const once = fakeClients({ failConnect: () => true });
    const plain = createKafkaSource({
      brokers: ['unused:9092'],
      ingestor: ingestorNeverCalled,
      clients: once.clients,
      schedule: once.schedule,
    });
    await assert.rejects(plain.start(), /broker unreachable/);
    assert.equal(once.scheduled.length, 0);
    await plain.stop();
  });

  it('a restart still connecting when the source stops stays stopped when that connect fails', async () => {
    const gate = deferred<void>();
    const fake = fakeClients({ connectGate: (n) => (n === 1 ? gate.promise : undefined), failConnect: (n) => n === 1 });
    const states: KafkaSourceState['status'][] = [];
    const source = idleSource(fake, {
      onState: (s) => states.push(s.status),
    });
    await source.start();
    fake.consumers[0]!.emit(fake.events.CRASH, { error: new Error('boom'), groupId: 'g', restart: false });
    fake.scheduled[0]!.run();
    await settle();
    await source.stop();
    gate.resolve();
    await settle();
    await settle();
    assert.equal(source.state().status, 'stopped');
    assert.equal(fake.scheduled.length, 1, 'no restart scheduled after stop');
    assert.deepEqual(states, ['starting', 'joining', 'running', 'restarting', 'stopped']);
  });

  it('bounds the restart delay for any number of crashes', () => {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const ceiling = Math.min(60_000, 1_000 * 2 ** attempt);
      for (const r of [0, 0.5, 0.999]) {
        const delay = restartDelay(attempt, 1_000, 60_000, () => r);
        assert.ok(delay >= ceiling / 2 && delay <= ceiling);
      }
    }
  });
});

describe('Kafka source: quiet on Node 24', () => {
  it('names its partitioner, so kafkajs prints no partitioner notice (it would for a bare producer)', (t) => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    t.onTestFinished(() => warn.mockRestore());
    createKafkaSource({ brokers: ['127.0.0.1:1'], ingestor: ingestorNeverCalled });
    assert.equal(warn.mock.calls.filter((call) => String(call[0]).includes('partitioner')).length, 0);
    new Kafka({ brokers: ['127.0.0.1:1'] }).producer();
    assert.equal(
      warn.mock.calls.filter((call) => String(call[0]).includes('partitioner')).length,
      1,
      'the check would see the notice',
    );
  });

  it('drops the negative-timeout warning kafkajs raises on Node 24 (a process without the filter prints it)', async () => {
    // Node prints a TimeoutNegativeWarning once per process, so each case runs in a process of its own.
    const source = pathToFileURL(join(import.meta.dirname, '..', '..', 'ingest', 'kafka', 'kafkajs-warnings.ts')).href;
    const script = (quiet: boolean) => `
      const { createRequire } = await import('node:module');
      const { quietKafkajsNegativeTimeouts } = await import(${JSON.stringify(source)});
      if (${quiet}) quietKafkajsNegativeTimeouts();
      // The call that warns on every kafkajs connection: its request queue, never throttled.
      const RequestQueue = createRequire(${JSON.stringify(source)})('kafkajs/src/network/requestQueue/index.js');
      const logger = { debug() {}, info() {}, warn() {}, error() {} };
      new RequestQueue({ logger }).scheduleCheckPendingRequests();
      setTimeout(() => process.exit(0), 50);
    `;
    const run = (quiet: boolean) =>
      new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script(quiet)],
          (error, _stdout, stderr) => (error ? reject(error) : resolve(stderr)),
        );
      });
    assert.match(await run(false), /TimeoutNegativeWarning/, 'without the filter kafkajs makes Node warn');
    assert.doesNotMatch(await run(true), /TimeoutNegativeWarning/);
  });

  it('lets negative-timeout warnings raised outside kafkajs through', async () => {
    // In a process of its own: warnings emitted here would be printed on the test run's stderr.
    const source = pathToFileURL(join(import.meta.dirname, '..', '..', 'ingest', 'kafka', 'kafkajs-warnings.ts')).href;
    const script = `
      const { quietKafkajsNegativeTimeouts } = await import(${JSON.stringify(source)});
      quietKafkajsNegativeTimeouts();
      process.emitWarning('-1 is a negative number.', 'TimeoutNegativeWarning');
      process.emitWarning('something else', 'DeprecationWarning');
    `;
    const stderr = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
        (error, _stdout, err) => (error ? reject(error) : resolve(err)),
      );
    });
    assert.match(stderr, /TimeoutNegativeWarning: -1 is a negative number\./);
    assert.match(stderr, /DeprecationWarning: something else/);
  });
});
