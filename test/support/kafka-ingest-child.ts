/**
 * One Kafka ingest process for the real-broker tests: the Kafka source with the real ingestor on an
 * embedded event log file that several such processes share (SQLite serialises their appends).
 * Argument: JSON {brokers, eventLog, groupId, topics, deadLetterTopic?, maxMessagesPerAppend?, appendDelayMs?, sessionTimeoutMs?}
 * (appendDelayMs: a pause before each append, so a test can stop a process while most messages are still to come).
 * Prints one JSON line per source status change and, every 200 ms, how many messages it handled.
 */
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { createKafkaSource } from '../../ingest/kafka/kafka-source.ts';
import { createIngestor } from '../../ingest/pipeline.ts';

type ChildOptions = {
  brokers: string[];
  eventLog: string;
  groupId: string;
  topics: string[];
  deadLetterTopic?: string;
  maxMessagesPerAppend?: number;
  appendDelayMs?: number;
  sessionTimeoutMs?: number;
};

const options = JSON.parse(process.argv[2] ?? '{}') as ChildOptions;
const log = createSqliteEventLog(options.eventLog);
const delayMs = options.appendDelayMs ?? 0;
const appending: typeof log = {
  ...log,
  appendBatch: async (groups) => {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return log.appendBatch(groups);
  },
};
let handled = 0;
const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const source = createKafkaSource({
  brokers: options.brokers,
  ingestor: createIngestor(appending, { followerProvider: 'followerscope' }),
  topics: options.topics,
  groupId: options.groupId,
  ...(options.deadLetterTopic ? { deadLetterTopic: options.deadLetterTopic } : {}),
  ...(options.maxMessagesPerAppend ? { maxMessagesPerAppend: options.maxMessagesPerAppend } : {}),
  ...(options.sessionTimeoutMs ? { sessionTimeoutMs: options.sessionTimeoutMs } : {}),
  logLevel: 'nothing',
  restartBaseDelayMs: 200,
  restartMaxDelayMs: 2000,
  onMessage: () => {
    handled += 1;
  },
  onState: (state) => say({ status: state.status }),
});
const progress = setInterval(() => say({ handled }), 200);
process.once('SIGTERM', () => {
  clearInterval(progress);
  void source
    .stop()
    .then(() => log.close())
    .then(() => process.exit(0));
});
await source.start({ retry: true });
