/**
 * What the Kafka source does with each batch kafkajs hands over (docs/decisions.md, "Kafka ingest").
 *
 * The batch goes to the event log through one `ingestBatch` call (one `EventLog.appendBatch`: one
 * transaction on the embedded log, one idempotent append per stream on KurrentDB), in offset order; a
 * batch longer than `maxMessagesPerAppend` is split into consecutive parts. appendBatch keeps every
 * stream's groups in input order, and a message's key names its stream's entity (keyFor), so one
 * entity's messages reach the event log in the order they were produced. Offsets are resolved and
 * committed explicitly only once a part is stored and its rejected messages are dead-lettered, so a
 * committed offset never passes a message whose events are not stored. When the ingestor throws
 * (e.g. the event log is down) nothing of that part is resolved and the handler rethrows: the part
 * is delivered again, and deterministic event ids make re-appending what was stored of it a no-op.
 *
 * The rejected messages of a part are written to the dead-letter topic, in one producer send, before
 * their offsets are resolved, each as {topic, partition, offset, key, path, reason, message}, where
 * `message` is kept by the NDJSON dead-letter file's rule (`deadLetterMessage`: every `thesisText`
 * withheld, a text that might hold one and cannot be searched withheld whole).
 *
 * kafkajs heartbeats only when called, so the handler calls heartbeat() every heartbeat interval while
 * a part is being appended: a slow event log cannot hold a member past its session timeout.
 */
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import { deadLetterMessage } from '../dead-letter-message.ts';
import type { BatchIngestor, IngestOutcome } from '../pipeline.ts';

/**
 * Most messages per ingestBatch call (one log transaction on the embedded log), as NDJSON ingest's
 * default batch: a kafkajs batch (1 MiB per partition by default) rarely holds more.
 */
export const DEFAULT_MAX_MESSAGES_PER_APPEND = 4000;
/** kafkajs's own default heartbeat interval; its session timeout defaults to 30 s. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 3000;

export type HandledMessage = { topic: string; partition: number; offset: string; outcome: IngestOutcome };

export type DeadLetter = {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  path: string;
  reason: string;
  /** The message as deadLetterMessage keeps it (every thesisText withheld); null when it had no value. */
  message: unknown;
};

function nextOffset(offset: string): string {
  return (BigInt(offset) + 1n).toString();
}

export type BatchHandlerOptions = {
  ingestor: Pick<BatchIngestor, 'ingestBatch'>;
  /** Stores rejected messages (offset order); must not return before every one is durably written. */
  deadLetters(letters: readonly DeadLetter[]): Promise<void>;
  onMessage?: (handled: HandledMessage) => void;
  /** Most messages per ingestBatch call (default DEFAULT_MAX_MESSAGES_PER_APPEND). */
  maxMessagesPerAppend?: number;
  /** How often heartbeat() is called while a part is appended (default DEFAULT_HEARTBEAT_INTERVAL_MS). */
  heartbeatIntervalMs?: number;
};

/**
 * Runs `work` calling `heartbeat` every `intervalMs` until it settles. A failed heartbeat (e.g. a
 * rebalance began) is not fatal here: the part is still stored, and the heartbeat after it reports it.
 */
async function heartbeating<T>(work: () => Promise<T>, heartbeat: () => Promise<void>, intervalMs: number): Promise<T> {
  const timer = setInterval(() => void heartbeat().catch(() => undefined), intervalMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * The per-batch work of the source, apart from kafkajs so its offset handling can be tested: the
 * batch in offset order, one ingestBatch call per part of at most `maxMessagesPerAppend` messages,
 * the part's rejects dead-lettered in one send, then its offsets resolved and committed.
 */
export function createBatchHandler(options: BatchHandlerOptions): (payload: EachBatchPayload) => Promise<void> {
  const maxPerAppend = Math.max(1, options.maxMessagesPerAppend ?? DEFAULT_MAX_MESSAGES_PER_APPEND);
  const heartbeatMs = Math.max(1, options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS);

  return async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale } = payload;
    const { messages } = batch;
    let handled: string | undefined;
    let uncommitted = false;
    const commit = async (): Promise<void> => {
      if (handled === undefined || !uncommitted) return;
      uncommitted = false;
      await commitOffsetsIfNecessary({
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: nextOffset(handled) }] }],
      });
    };
    const resolve = (message: KafkaMessage, outcome: IngestOutcome) => {
      options.onMessage?.({ topic: batch.topic, partition: batch.partition, offset: message.offset, outcome });
      resolveOffset(message.offset);
      handled = message.offset;
      uncommitted = true;
    };

    for (let start = 0; start < messages.length; start += maxPerAppend) {
      // After a rebalance or stop, leave the rest to whoever owns the partition next.
      if (!isRunning() || isStale()) break;
      const part = messages.slice(start, start + maxPerAppend);
      const raws = part.map((message) => (message.value === null ? null : message.value.toString('utf8')));
      const values = raws.filter((raw): raw is string => raw !== null);
      let outcomes: IngestOutcome[];
      try {
        const append = () => options.ingestor.ingestBatch(values, 'kafka');
        const stored = values.length > 0 ? await heartbeating(append, heartbeat, heartbeatMs) : [];
        if (stored.length !== values.length)
          throw new Error(`ingestBatch answered ${stored.length} outcomes for ${values.length} messages`);
        let next = 0;
        outcomes = raws.map((raw) =>
          raw === null ? { status: 'rejected', path: '', reason: 'message has no value' } : stored[next++]!,
        );
      } catch (error) {
        // Nothing of this part is resolved: it is delivered again, and what was stored of it is a duplicate then.
        await commit().catch(() => undefined);
        throw error;
      }
      const letters: DeadLetter[] = [];
      part.forEach((message, index) => {
        const outcome = outcomes[index]!;
        if (outcome.status !== 'rejected') return;
        letters.push({
          topic: batch.topic,
          partition: batch.partition,
          offset: message.offset,
          key: message.key === null ? null : message.key.toString('utf8'),
          path: outcome.path,
          reason: outcome.reason,
          message: raws[index] === null ? null : deadLetterMessage(raws[index]!).message,
        });
      });
      if (letters.length > 0) {
        try {
          await heartbeating(() => options.deadLetters(letters), heartbeat, heartbeatMs);
        } catch (error) {
          // The part is stored; only the messages before its first reject are fully handled.
          for (let index = 0; index < part.length && outcomes[index]!.status !== 'rejected'; index += 1)
            resolve(part[index]!, outcomes[index]!);
          await commit().catch(() => undefined);
          throw error;
        }
      }
      part.forEach((message, index) => resolve(message, outcomes[index]!));
      await commit();
      await heartbeat();
    }
    await commit();
  };
}
