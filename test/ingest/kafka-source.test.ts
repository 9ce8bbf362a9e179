import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { Kafka, type ConsumerRunConfig, type EachBatchPayload, type KafkaMessage, type OffsetsByTopicPartition } from 'kafkajs';
import {
  createBatchHandler,
  createKafkaSource,
  quietKafkajsNegativeTimeouts,
  restartDelay,
  type KafkaSourceState,
  type SourceConsumer,
  type SourceProducer,
  deadLetterMessage,
  keyFor,
  sourceTopics,
  topicFor,
  type DeadLetter,
  type HandledMessage,
} from '../../ingest/kafka/kafka-source.ts';
import type { IngestOutcome, Ingestor } from '../../ingest/pipeline.ts';
import { prng } from '../support/seed.ts';

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

/** An ingestor answering from a script keyed by the raw value; 'THROW' simulates the event log being down. */
function scriptedIngestor(answers: Record<string, IngestOutcome | 'THROW'>): Ingestor & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    async ingest(raw, source) {
      assert.equal(source, 'kafka');
      seen.push(raw);
      const answer = answers[raw];
      if (answer === undefined) throw new Error(`unexpected message ${raw}`);
      if (answer === 'THROW') throw new Error('event log unavailable');
      return answer;
    },
  };
}

const committedOffset = (commit: OffsetsByTopicPartition | undefined) => commit?.topics[0]?.partitions[0]?.offset;

void describe('Kafka source: batch handling', () => {
  void it('hands every value to the ingestor in order, resolves each once handled, and commits the next offset', async () => {
    const ingestor = scriptedIngestor({ a: { status: 'accepted' }, b: { status: 'duplicate' }, c: { status: 'accepted' } });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const handled: HandledMessage[] = [];
    const letters: DeadLetter[] = [];
    const eachBatch = createBatchHandler({
      ingestor,
      deadLetter: async (letter) => {
        letters.push(letter);
      },
      onMessage: (h) => handled.push(h),
    });
    await eachBatch(payload([message(10, 'a'), message(11, 'b'), message(12, 'c')], recorded));
    assert.deepEqual(ingestor.seen, ['a', 'b', 'c']);
    assert.deepEqual(recorded.resolved, ['10', '11', '12']);
    assert.deepEqual(recorded.commits, [{ topics: [{ topic: sourceTopics.calls, partitions: [{ partition: 2, offset: '13' }] }] }]);
    assert.deepEqual(
      handled.map((h) => [h.offset, h.outcome.status]),
      [
        ['10', 'accepted'],
        ['11', 'duplicate'],
        ['12', 'accepted'],
      ],
    );
    assert.deepEqual(letters, []);
  });

  void it('dead-letters a rejected message with its coordinates and reason, thesis text withheld, then moves on', async () => {
    const call = JSON.stringify({ type: 'call.recorded', id: 'm-1', at: '2026-11-20T08:00:00Z', data: { id: 'x', thesisText: 'SECRET THESIS' } });
    const ingestor = scriptedIngestor({
      [call]: { status: 'rejected', path: 'data.id', reason: 'Invalid UUID' },
      ok: { status: 'accepted' },
    });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const letters: DeadLetter[] = [];
    const eachBatch = createBatchHandler({
      ingestor,
      deadLetter: async (letter) => {
        letters.push(letter);
      },
    });
    await eachBatch(payload([message(5, call, 'x'), message(6, null), message(7, 'ok')], recorded));
    // Keys are handled concurrently, so dead letters of different keys may be written in either order.
    letters.sort((a, b) => Number(a.offset) - Number(b.offset));
    assert.deepEqual(letters, [
      {
        topic: sourceTopics.calls,
        partition: 2,
        offset: '5',
        key: 'x',
        path: 'data.id',
        reason: 'Invalid UUID',
        message: { type: 'call.recorded', id: 'm-1', at: '2026-11-20T08:00:00Z', data: { id: 'x', thesisText: '[withheld]' } },
      },
      { topic: sourceTopics.calls, partition: 2, offset: '6', key: null, path: '', reason: 'message has no value', message: null },
    ]);
    assert.equal(JSON.stringify(letters).includes('SECRET'), false);
    assert.deepEqual(ingestor.seen, [call, 'ok'], 'a message without a value never reaches the ingestor');
    assert.deepEqual(recorded.resolved, ['5', '6', '7']);
    assert.equal(committedOffset(recorded.commits.at(-1)), '8');
  });

  void it('on an ingest failure commits only what was handled before it and rethrows, so the rest is redelivered', async () => {
    const ingestor = scriptedIngestor({ a: { status: 'accepted' }, b: 'THROW', c: { status: 'accepted' } });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({ ingestor, deadLetter: async () => assert.fail('nothing is rejected') });
    await assert.rejects(eachBatch(payload([message(20, 'a'), message(21, 'b'), message(22, 'c')], recorded)), /event log unavailable/);
    assert.deepEqual(ingestor.seen, ['a', 'b']);
    assert.deepEqual(recorded.resolved, ['20']);
    assert.deepEqual(recorded.commits.map(committedOffset), ['21']);
  });

  void it('does not resolve a rejected message whose dead letter could not be written', async () => {
    const ingestor = scriptedIngestor({ bad: { status: 'rejected', path: 'type', reason: 'unknown type' } });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({
      ingestor,
      deadLetter: async () => {
        throw new Error('dead-letter topic unavailable');
      },
    });
    await assert.rejects(eachBatch(payload([message(3, 'bad')], recorded)), /dead-letter topic unavailable/);
    assert.deepEqual(recorded.resolved, []);
    assert.deepEqual(recorded.commits, []);
  });

  void it('stops between messages once the consumer stops running and commits what it handled', async () => {
    const ingestor = scriptedIngestor({ a: { status: 'accepted' }, b: { status: 'accepted' } });
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    let running = true;
    const eachBatch = createBatchHandler({
      ingestor,
      deadLetter: async () => undefined,
      onMessage: () => {
        running = false;
      },
    });
    await eachBatch(payload([message(0, 'a'), message(1, 'b')], recorded, () => running));
    assert.deepEqual(ingestor.seen, ['a']);
    assert.deepEqual(recorded.commits.map(committedOffset), ['1']);
  });

  void it('commits at least every 100 messages inside a long batch', async () => {
    const values = Array.from({ length: 250 }, (_, i) => `m${i}`);
    const ingestor = scriptedIngestor(Object.fromEntries(values.map((v) => [v, { status: 'accepted' as const }])));
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({ ingestor, deadLetter: async () => undefined });
    await eachBatch(payload(values.map((v, i) => message(1000 + i, v)), recorded));
    assert.deepEqual(recorded.commits.map(committedOffset), ['1100', '1200', '1250']);
  });
});

void describe('Kafka source: routing and dead-letter form', () => {
  void it('routes each message family to its topic and keys it by its entity', () => {
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

  void it('withholds thesisText at any depth and never passes on non-JSON that mentions it', () => {
    assert.deepEqual(deadLetterMessage('{"data":{"calls":[{"thesisText":"x","n":1}],"thesisText":null}}'), {
      data: { calls: [{ thesisText: '[withheld]', n: 1 }], thesisText: '[withheld]' },
    });
    assert.equal(deadLetterMessage('not json at all'), 'not json at all');
    assert.equal(deadLetterMessage('{"thesisText": "cut off'), null);
    assert.equal(deadLetterMessage(null), null);
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

/** An ingestor whose every call waits until the test answers it. */
function manualIngestor() {
  const pending = new Map<string, ReturnType<typeof deferred<IngestOutcome>>>();
  const started: string[] = [];
  const ingestor: Ingestor = {
    ingest(raw) {
      started.push(raw);
      const answer = deferred<IngestOutcome>();
      pending.set(raw, answer);
      return answer.promise;
    },
  };
  return { ingestor, started, answer: (raw: string, outcome: IngestOutcome | Error) => {
    const answer = pending.get(raw);
    assert.ok(answer, `${raw} was not started`);
    if (outcome instanceof Error) answer.reject(outcome);
    else answer.resolve(outcome);
  } };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

void describe('Kafka source: keys in parallel, each key in order, commits after append', () => {
  void it('runs different keys at once, one key strictly in offset order, and resolves only the handled run from the start', async () => {
    const manual = manualIngestor();
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({ ingestor: manual.ingestor, deadLetter: async () => assert.fail('nothing is rejected') });
    const batch = [message(1, 'a1', 'A'), message(2, 'b1', 'B'), message(3, 'a2', 'A'), message(4, 'c1', 'C'), message(5, 'b2', 'B')];
    const running = eachBatch(payload(batch, recorded));
    await settle();
    assert.deepEqual(manual.started, ['a1', 'b1', 'c1'], 'the first message of every key starts at once; a2 and b2 wait for their key');
    manual.answer('b1', { status: 'accepted' });
    await settle();
    assert.deepEqual(manual.started, ['a1', 'b1', 'c1', 'b2'], 'b2 starts once b1 is stored');
    manual.answer('b2', { status: 'accepted' });
    manual.answer('c1', { status: 'accepted' });
    await settle();
    assert.deepEqual(recorded.resolved, [], 'a1 (offset 1) is not stored yet, so no offset is resolved past it');
    assert.equal(manual.started.includes('a2'), false);
    manual.answer('a1', { status: 'accepted' });
    await settle();
    assert.deepEqual(recorded.resolved, ['1', '2'], 'offsets 1-2 are handled; 3 (a2) is not');
    assert.deepEqual(manual.started, ['a1', 'b1', 'c1', 'b2', 'a2']);
    manual.answer('a2', { status: 'duplicate' });
    await running;
    assert.deepEqual(recorded.resolved, ['1', '2', '3', '4', '5']);
    assert.deepEqual(recorded.commits.map(committedOffset), ['6']);
  });

  void it('after a failure starts nothing new, lets messages in flight finish, and commits only up to the first unhandled offset', async () => {
    const manual = manualIngestor();
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({ ingestor: manual.ingestor, deadLetter: async () => undefined });
    const batch = [message(10, 'a1', 'A'), message(11, 'b1', 'B'), message(12, 'c1', 'C'), message(13, 'a2', 'A'), message(14, 'd1', 'D')];
    const running = eachBatch(payload(batch, recorded));
    const failed = assert.rejects(running, /event log unavailable/);
    await settle();
    assert.deepEqual(manual.started, ['a1', 'b1', 'c1', 'd1']);
    manual.answer('a1', { status: 'accepted' });
    manual.answer('b1', new Error('event log unavailable'));
    await settle();
    assert.equal(manual.started.includes('a2'), false, 'nothing new starts after a failure');
    manual.answer('c1', { status: 'accepted' });
    manual.answer('d1', { status: 'accepted' });
    await failed;
    assert.deepEqual(recorded.resolved, ['10'], 'b1 (11) failed: c1 and d1 are stored but sit past it, and are delivered again');
    assert.deepEqual(recorded.commits.map(committedOffset), ['11']);
  });

  void it('under random timings: each key strictly in order, offsets resolved in order and only over stored messages, commits never go back', async () => {
    for (let seed = 1; seed <= 25; seed += 1) {
      const random = prng(seed);
      const batch = Array.from({ length: 120 }, (_, i) => message(500 + i, `m${i}`, random() < 0.1 ? null : `k${Math.floor(random() * 9)}`));
      const keyOf = new Map(batch.map((m) => [m.value!.toString(), m.key === null ? null : m.key.toString()]));
      const stored = new Set<string>();
      const inFlight = new Set<string | null>();
      const startedByKey = new Map<string | null, string[]>();
      const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
      const ingestor: Ingestor = {
        async ingest(raw) {
          const key = keyOf.get(raw)!;
          assert.equal(inFlight.has(key), false, `seed ${seed}: two messages of key ${key} at once`);
          inFlight.add(key);
          startedByKey.set(key, [...(startedByKey.get(key) ?? []), raw]);
          for (let i = Math.floor(random() * 4); i > 0; i -= 1) await new Promise((resolve) => setImmediate(resolve));
          inFlight.delete(key);
          stored.add(raw);
          return { status: 'accepted' };
        },
      };
      const eachBatch = createBatchHandler({ ingestor, deadLetter: async () => undefined, keysConcurrently: 4 });
      const base = payload(batch, recorded);
      await eachBatch({
        ...base,
        resolveOffset: (offset) => {
          const index = Number(offset) - 500;
          for (let i = 0; i <= index; i += 1) assert.ok(stored.has(`m${i}`), `seed ${seed}: offset ${offset} resolved before m${i} was stored`);
          base.resolveOffset(offset);
        },
      });
      for (const [key, started] of startedByKey) {
        const expected = batch.filter((m) => (m.key === null ? null : m.key.toString()) === key).map((m) => m.value!.toString());
        assert.deepEqual(started, expected, `seed ${seed}: key ${key} in offset order`);
      }
      assert.deepEqual(
        recorded.resolved,
        batch.map((m) => m.offset),
      );
      const commits = recorded.commits.map((c) => Number(committedOffset(c)));
      assert.deepEqual(commits, [...commits].sort((a, b) => a - b), `seed ${seed}: commits only move forward`);
      assert.equal(commits.at(-1), 620);
    }
  });

  void it('bounds how many keys run at once inside one batch', async () => {
    const manual = manualIngestor();
    const recorded: Recorded = { resolved: [], commits: [], heartbeats: 0 };
    const eachBatch = createBatchHandler({ ingestor: manual.ingestor, deadLetter: async () => undefined, keysConcurrently: 2 });
    const running = eachBatch(payload([message(0, 'k0', 'K0'), message(1, 'k1', 'K1'), message(2, 'k2', 'K2')], recorded));
    await settle();
    assert.deepEqual(manual.started, ['k0', 'k1']);
    manual.answer('k0', { status: 'accepted' });
    await settle();
    assert.deepEqual(manual.started, ['k0', 'k1', 'k2']);
    manual.answer('k1', { status: 'accepted' });
    manual.answer('k2', { status: 'accepted' });
    await running;
    assert.deepEqual(recorded.resolved, ['0', '1', '2']);
  });
});

type Listener = (event: { payload: { error: Error; groupId: string; restart: boolean } }) => void;

/** kafkajs consumers as the source sees them, recording what it asked of each. */
function fakeClients(options: { failConnect?: (n: number) => boolean; connectGate?: Promise<void> } = {}) {
  const consumers: { listeners: Map<string, Listener[]>; runConfig?: ConsumerRunConfig; disconnected: boolean; emit(event: string, payload?: unknown): void }[] = [];
  const scheduled: { run: () => void; delayMs: number; cancelled: boolean }[] = [];
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
          await options.connectGate;
          if (options.failConnect?.(n)) throw new Error('broker unreachable');
        },
        subscribe: async () => undefined,
        run: async (config?: ConsumerRunConfig) => {
          record.runConfig = config;
        },
        disconnect: async () => {
          record.disconnected = true;
        },
      } as unknown as SourceConsumer;
    },
    producer(): SourceProducer {
      return { connect: async () => undefined, disconnect: async () => undefined, send: async () => [] } as unknown as SourceProducer;
    },
  };
  const schedule = (run: () => void, delayMs: number) => {
    const entry = { run, delayMs, cancelled: false };
    scheduled.push(entry);
    return () => {
      entry.cancelled = true;
    };
  };
  return { clients, consumers, scheduled, schedule, events };
}

const ingestorNeverCalled: Ingestor = { ingest: async () => assert.fail('no message in these tests') };

void describe('Kafka source: consumer supervision', () => {
  void it('runs partitions concurrently with explicit commits', async () => {
    const fake = fakeClients();
    const source = createKafkaSource({ brokers: ['unused:9092'], ingestor: ingestorNeverCalled, clients: fake.clients, schedule: fake.schedule });
    await source.start();
    const config = fake.consumers[0]!.runConfig!;
    assert.equal(config.autoCommit, false);
    assert.equal(config.eachBatchAutoResolve, false);
    assert.ok((config.partitionsConsumedConcurrently ?? 1) > 1, 'more than one partition at a time');
    assert.equal(source.state().status, 'running');
    await source.stop();
    assert.equal(source.state().status, 'stopped');
  });

  void it('starts a new consumer after a crash kafkajs will not restart, with capped exponential backoff, and reports each state', async () => {
    const fake = fakeClients({ failConnect: (n) => n >= 1 && n <= 5 });
    const states: KafkaSourceState['status'][] = [];
    const source = createKafkaSource({
      brokers: ['unused:9092'],
      ingestor: ingestorNeverCalled,
      clients: fake.clients,
      schedule: fake.schedule,
      random: () => 0.5,
      restartBaseDelayMs: 1_000,
      restartMaxDelayMs: 8_000,
      onState: (state) => states.push(state.status),
    });
    await source.start();
    fake.consumers[0]!.emit(fake.events.CRASH, { error: Object.assign(new Error('The group is rebalancing'), { name: 'KafkaJSProtocolError' }), groupId: 'g', restart: false });
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
    assert.deepEqual(states, ['starting', 'running', 'restarting', 'running']);
    // Back in service, the next crash starts from the base delay again.
    fake.consumers[6]!.emit(fake.events.CRASH, { error: new Error('boom'), groupId: 'g', restart: false });
    assert.equal(fake.scheduled.at(-1)!.delayMs, 750);
    await source.stop();
    assert.equal(fake.scheduled.at(-1)!.cancelled, true, 'stop cancels a pending restart');
  });

  void it('leaves a crash kafkajs restarts itself to kafkajs, and is running again when the consumer rejoins its group', async () => {
    const fake = fakeClients();
    const source = createKafkaSource({ brokers: ['unused:9092'], ingestor: ingestorNeverCalled, clients: fake.clients, schedule: fake.schedule });
    await source.start();
    fake.consumers[0]!.emit(fake.events.CRASH, { error: new Error('connection lost'), groupId: 'g', restart: true });
    assert.equal(source.state().status, 'restarting');
    assert.equal(fake.scheduled.length, 0);
    fake.consumers[0]!.emit(fake.events.GROUP_JOIN, {});
    assert.equal(source.state().status, 'running');
    assert.equal(source.state().restarts, 0);
    await source.stop();
  });

  void it('a consumer still connecting when the source stops never starts consuming', async () => {
    const gate = deferred<void>();
    const fake = fakeClients({ connectGate: gate.promise });
    const source = createKafkaSource({ brokers: ['unused:9092'], ingestor: ingestorNeverCalled, clients: fake.clients, schedule: fake.schedule });
    const starting = source.start();
    await settle();
    const stopping = source.stop();
    gate.resolve();
    await Promise.all([starting, stopping]);
    assert.equal(fake.consumers[0]!.runConfig, undefined, 'run was never called');
    assert.equal(fake.consumers[0]!.disconnected, true);
    assert.equal(source.state().status, 'stopped');
  });

  void it('bounds the restart delay for any number of crashes', () => {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const ceiling = Math.min(60_000, 1_000 * 2 ** attempt);
      for (const r of [0, 0.5, 0.999]) {
        const delay = restartDelay(attempt, 1_000, 60_000, () => r);
        assert.ok(delay >= ceiling / 2 && delay <= ceiling);
      }
    }
  });
});

void describe('Kafka source: quiet on Node 24', () => {
  void it('names its partitioner, so kafkajs prints no partitioner notice (it would for a bare producer)', (t) => {
    const warn = t.mock.method(console, 'warn', () => undefined);
    createKafkaSource({ brokers: ['127.0.0.1:1'], ingestor: ingestorNeverCalled });
    assert.equal(warn.mock.calls.filter((call) => String(call.arguments[0]).includes('partitioner')).length, 0);
    new Kafka({ brokers: ['127.0.0.1:1'] }).producer();
    assert.equal(warn.mock.calls.filter((call) => String(call.arguments[0]).includes('partitioner')).length, 1, 'the check would see the notice');
  });

  void it('drops the negative-timeout warning kafkajs raises on Node 24 (a process without the filter prints it)', async () => {
    // Node prints a TimeoutNegativeWarning once per process, so each case runs in a process of its own.
    const source = pathToFileURL(join(import.meta.dirname, '..', '..', 'ingest', 'kafka', 'kafka-source.ts')).href;
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
        execFile(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script(quiet)], (error, _stdout, stderr) =>
          error ? reject(error) : resolve(stderr),
        );
      });
    assert.match(await run(false), /TimeoutNegativeWarning/, 'without the filter kafkajs makes Node warn');
    assert.doesNotMatch(await run(true), /TimeoutNegativeWarning/);
  });

  void it('lets negative-timeout warnings raised outside kafkajs through', async () => {
    quietKafkajsNegativeTimeouts();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      process.emitWarning('-1 is a negative number.', 'TimeoutNegativeWarning');
      process.emitWarning('something else', 'DeprecationWarning');
      await settle();
      assert.deepEqual(warnings, ['TimeoutNegativeWarning', 'DeprecationWarning']);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
