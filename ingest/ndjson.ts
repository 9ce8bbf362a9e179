import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { deadLetterMessage } from './dead-letter-message.ts';
import type { BatchIngestor, IngestOutcome } from './pipeline.ts';

/** One NDJSON input: a file, or stdin under the name '-'. */
export type NdjsonInput = { name: string; stream: Readable };

export type NdjsonCounts = { lines: number; accepted: number; duplicate: number; rejected: number };

export type DeadLetterEntry = {
  file: string;
  line: number;
  type: string | null;
  id: string | null;
  path: string;
  reason: string;
  /** The message as received, with every thesisText withheld. */
  message: unknown;
};

export type DeadLetterSink = { write(entry: DeadLetterEntry): Promise<void>; close(): Promise<void> };

/** `bytes`: UTF-8 bytes of the lines read so far, newlines included (a share of the input's size). */
export type NdjsonProgress = { lines: number; linesPerSecond: number; bytes: number };

/** Messages per batch append unless told otherwise (`pulseboard ingest --batch-size`). */
export const DEFAULT_INGEST_BATCH = 16_000;

/** Input idle this long (at most) stores the lines read so far: a pipe held open (`tail -f | ingest -`) shows them. */
export const IDLE_FLUSH_MS = 1_000;

export type NdjsonOptions = {
  ingestor: BatchIngestor;
  /** Messages per batch append (one transaction on the embedded log); default DEFAULT_INGEST_BATCH. */
  batchSize?: number;
  deadLetter: DeadLetterSink;
  /** Called at most once per `progressIntervalMs` while lines are being read. */
  onProgress?: (progress: NdjsonProgress) => void;
  progressIntervalMs?: number;
  /** The batch read so far is stored once the input has been idle for at most this long; default IDLE_FLUSH_MS. */
  idleFlushMs?: number;
  now?: () => number;
};

export type NdjsonResult =
  | { ok: true; counts: NdjsonCounts }
  /**
   * The event log failed: counts of the batches stored, and the first line of the batch that was
   * not (nothing from that line on was stored or dead-lettered; ingest it again from there).
   */
  | { ok: false; counts: NdjsonCounts; file: string; line: number; reason: string };

async function writeWithBackpressure(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

/** Appends dead letters to an NDJSON file, created (with its directory) only when the first one arrives. */
export function createDeadLetterFile(path: string): DeadLetterSink {
  let stream: WriteStream | null = null;
  let failure: Error | null = null;
  return {
    async write(entry) {
      if (failure) throw failure;
      if (!stream) {
        mkdirSync(dirname(path), { recursive: true });
        stream = createWriteStream(path, { flags: 'a' });
        stream.on('error', (error) => {
          failure = error;
        });
        await once(stream, 'open');
      }
      await writeWithBackpressure(stream, `${JSON.stringify(entry)}\n`);
    },
    async close() {
      if (!stream) return;
      const open = stream;
      stream = null;
      open.end();
      await once(open, 'finish');
      if (failure) throw failure;
    },
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Streams each input line by line (readline over the stream, so memory stays flat whatever the
 * file size), skips blank lines, ingests the rest in order in batches of `batchSize` messages (or
 * fewer, once the input has been idle for `idleFlushMs`), and dead-letters the rejects of each batch
 * once it is stored.
 */
export async function ingestNdjson(inputs: readonly NdjsonInput[], options: NdjsonOptions): Promise<NdjsonResult> {
  const now = options.now ?? Date.now;
  const interval = options.progressIntervalMs ?? 2000;
  // Large batches: random event ids spread each batch over the id index, and a larger transaction
  // rewrites each touched page fewer times. A batch is a few MB of text in memory.
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_INGEST_BATCH);
  const idleFlushMs = options.idleFlushMs ?? IDLE_FLUSH_MS;
  const idleTickMs = Math.max(1, idleFlushMs / 2);
  const counts: NdjsonCounts = { lines: 0, accepted: 0, duplicate: 0, rejected: 0 };
  const started = now();
  let lastProgress = started;
  let bytes = 0;

  for (const input of inputs) {
    const lines = createInterface({ input: input.stream, crlfDelay: Infinity });
    let lineNumber = 0;
    // The batch: each message with its line number and `counts.lines` when it was read.
    let raws: string[] = [];
    let lineNumbers: number[] = [];
    let linesRead: number[] = [];

    /** Appends the batch; on failure, the result that stops ingest at its first line. */
    const flush = async (): Promise<NdjsonResult | null> => {
      if (raws.length === 0) return null;
      const batch = raws;
      const numbers = lineNumbers;
      const read = linesRead;
      raws = [];
      lineNumbers = [];
      linesRead = [];
      let outcomes: IngestOutcome[];
      try {
        outcomes = await options.ingestor.ingestBatch(batch, 'ndjson');
      } catch (error) {
        return {
          ok: false,
          counts: { ...counts, lines: read[0]! },
          file: input.name,
          line: numbers[0]!,
          reason: errorText(error),
        };
      }
      for (const [index, outcome] of outcomes.entries()) {
        if (outcome.status !== 'rejected') {
          counts[outcome.status] += 1;
          continue;
        }
        counts.rejected += 1;
        const kept = deadLetterMessage(batch[index]!);
        await options.deadLetter.write({
          file: input.name,
          line: numbers[index]!,
          type: kept.type,
          id: kept.id,
          path: outcome.path,
          reason: outcome.reason,
          message: kept.message,
        });
      }
      return null;
    };
    // Batches are stored one after another, in order, whether a full batch or idle input asked for it.
    let flushing: Promise<NdjsonResult | null> = Promise.resolve(null);
    const flushInOrder = (): Promise<NdjsonResult | null> => (flushing = flushing.then((failed) => failed ?? flush()));
    const stop = (failure: NdjsonResult): NdjsonResult => {
      lines.close();
      input.stream.destroy();
      return failure;
    };

    // Idle input: while the reader waits for a line and none came since the last tick (half the idle
    // bound), or a trickle has kept the batch's first line waiting the whole bound, what was read is
    // stored. A file read at full speed fills its batches first.
    let waiting = false;
    let linesSinceTick = 0;
    let batchStartedAt = 0;
    let idleFailure: NdjsonResult | null = null;
    const idle = setInterval(() => {
      if (waiting && raws.length > 0 && (linesSinceTick === 0 || performance.now() - batchStartedAt >= idleFlushMs))
        void flushInOrder().then((failure) => {
          if (failure && !idleFailure) idleFailure = stop(failure);
        });
      linesSinceTick = 0;
    }, idleTickMs);
    idle.unref();

    try {
      const reader = lines[Symbol.asyncIterator]();
      for (;;) {
        waiting = true;
        const next = await reader.next();
        waiting = false;
        if (next.done) break;
        const text = next.value;
        linesSinceTick += 1;
        lineNumber += 1;
        counts.lines += 1;
        if (options.onProgress) {
          bytes += Buffer.byteLength(text) + 1;
          const t = now();
          if (t - lastProgress >= interval) {
            lastProgress = t;
            const seconds = Math.max((t - started) / 1000, 0.001);
            options.onProgress({ lines: counts.lines, linesPerSecond: Math.round(counts.lines / seconds), bytes });
          }
        }
        const raw = lineNumber === 1 ? text.replace(/^\uFEFF/, '') : text;
        if (raw.trim().length === 0) continue;
        if (raws.length === 0) batchStartedAt = performance.now();
        raws.push(raw);
        lineNumbers.push(lineNumber);
        linesRead.push(counts.lines);
        if (raws.length >= batchSize) {
          const failure = await flushInOrder();
          if (failure) return stop(failure);
        }
      }
      // A failed idle flush already stopped the input (which ended the loop).
      if (idleFailure) return idleFailure;
      const failure = await flushInOrder();
      if (failure) return stop(failure);
    } finally {
      clearInterval(idle);
    }
  }
  return { ok: true, counts };
}
