import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EachBatchPayload, KafkaMessage, OffsetsByTopicPartition } from 'kafkajs';
import {
  createBatchHandler,
  deadLetterMessage,
  keyFor,
  sourceTopics,
  topicFor,
  type DeadLetter,
  type HandledMessage,
} from '../../ingest/kafka/kafka-source.ts';
import type { IngestOutcome, Ingestor } from '../../ingest/pipeline.ts';

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
