import assert from 'node:assert/strict';
import { createReadStream, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, it } from 'vitest';
import type { EventLog } from '../../eventstore/port.ts';
import { createDeadLetterFile, ingestNdjson, type DeadLetterEntry, type NdjsonProgress } from '../../ingest/ndjson.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { example, examples, line, THESIS, THESIS_HIDING_MESSAGES } from './examples.ts';
import { tempLog } from './helpers.ts';

function readDeadLetters(path: string): DeadLetterEntry[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as DeadLetterEntry);
}

describe('NDJSON ingest', () => {
  let dir: string;
  let log: EventLog;
  let cleanup: () => Promise<void>;
  beforeEach(() => {
    ({ dir, log, cleanup } = tempLog());
  });
  afterEach(async () => {
    await cleanup();
  });

  const run = async (file: string, deadLetterPath: string, options: { log?: EventLog; batchSize?: number } = {}) => {
    const deadLetter = createDeadLetterFile(deadLetterPath);
    try {
      return await ingestNdjson([{ name: file, stream: createReadStream(file) }], {
        ingestor: createIngestor(options.log ?? log, { followerProvider: 'followerscope' }),
        deadLetter,
        ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
      });
    } finally {
      await deadLetter.close();
    }
  };

  it('appends the good lines, dead-letters each bad one with its line and path, and withholds thesis text', async () => {
    const badCall = example('call.recorded');
    badCall.data.caller.profileUrl = 'nope';
    const badBeat = example('pulse.published');
    badBeat.data.card.beat = 'weather';
    const lines = [
      line(examples['project.sighted']), // 1
      '', // 2 blank
      line(badCall), // 3
      line(examples['call.recorded']), // 4
      `{"type":"call.recorded","id":"x","data":{"thesisText":"${THESIS}"`, // 5 not JSON
      '   ', // 6 blank
      line(badBeat), // 7
      line(examples['vote.cast']), // 8
    ];
    const file = join(dir, 'in.ndjson');
    writeFileSync(file, `${lines.join('\r\n')}\r\n`);
    const deadLetterPath = join(dir, 'dead', 'letters.ndjson');

    const result = await run(file, deadLetterPath);
    assert.deepEqual(result, { ok: true, counts: { lines: 8, accepted: 3, duplicate: 0, rejected: 3 } });
    assert.equal((await log.headPosition()) > 0, true);
    assert.equal((await log.readAll({ afterPosition: 0, limit: 10 })).length, 3);

    const letters = readDeadLetters(deadLetterPath);
    assert.deepEqual(
      letters.map((l) => [l.file, l.line, l.type, l.id, l.path]),
      [
        [file, 3, 'call.recorded', 'call-1', 'data.caller.profileUrl'],
        [file, 5, null, null, '(message)'],
        [file, 7, 'pulse.published', 'pulse-1', 'data.card.beat'],
      ],
    );
    assert.match(letters[1]!.reason, /not valid JSON/);
    const withheldCall = letters[0]!.message as { data: { thesisText: string; caller: { profileUrl: string } } };
    assert.equal(withheldCall.data.thesisText, `[withheld: ${THESIS.length} characters]`);
    assert.equal(withheldCall.data.caller.profileUrl, 'nope', 'the rest of the message is kept');
    assert.deepEqual(letters[2]!.message, badBeat);

    const raw = readFileSync(deadLetterPath, 'utf8');
    assert.equal(raw.includes(THESIS), false, 'no thesis text in the dead-letter file');
    assert.equal(raw.includes('Private thesis'), false);
  });

  it('dead-letters deep, escaped and unparseable messages without their thesis', async () => {
    const file = join(dir, 'hostile.ndjson');
    writeFileSync(file, `${THESIS_HIDING_MESSAGES.join('\n')}\n`);
    const deadLetterPath = join(dir, 'hostile-letters.ndjson');
    const result = await run(file, deadLetterPath);
    const count = THESIS_HIDING_MESSAGES.length;
    assert.deepEqual(result, { ok: true, counts: { lines: count, accepted: 0, duplicate: 0, rejected: count } });
    assert.equal(readDeadLetters(deadLetterPath).length, count);
    assert.doesNotMatch(readFileSync(deadLetterPath, 'utf8'), /SECRET/);
  });

  it('appends nothing when the same file is ingested again', async () => {
    const file = join(dir, 'all.ndjson');
    writeFileSync(file, Object.values(examples).map(line).join('\n'));
    const first = await run(file, join(dir, 'dl.ndjson'));
    assert.deepEqual(first.counts, { lines: 14, accepted: 14, duplicate: 0, rejected: 0 });
    const head = await log.headPosition();
    const second = await run(file, join(dir, 'dl.ndjson'));
    assert.deepEqual(second, { ok: true, counts: { lines: 14, accepted: 0, duplicate: 14, rejected: 0 } });
    assert.equal(await log.headPosition(), head);
    assert.equal(existsSync(join(dir, 'dl.ndjson')), false, 'no dead-letter file without rejects');
  });

  it('stops at the line where the event log failed, reporting what it did so far', async () => {
    const file = join(dir, 'in.ndjson');
    writeFileSync(
      file,
      [line(examples['rival.listed']), line(examples['vote.cast']), line(examples['ask.updated'])].join('\n'),
    );
    let appends = 0;
    const flaky: EventLog = {
      ...log,
      appendBatch: (groups) => {
        appends += 1;
        return appends === 2 ? Promise.reject(new Error('database is locked')) : log.appendBatch(groups);
      },
    };
    const result = await run(file, join(dir, 'dl.ndjson'), { log: flaky, batchSize: 1 });
    assert.deepEqual(result, {
      ok: false,
      counts: { lines: 2, accepted: 1, duplicate: 0, rejected: 0 },
      file,
      line: 2,
      reason: 'database is locked',
    });
  });

  it('a failed batch stores and dead-letters nothing of itself; ingest resumes from its first line exactly once', async () => {
    const file = join(dir, 'in.ndjson');
    const bad = example('pulse.published');
    bad.data.card.beat = 'weather';
    const texts = [
      line(examples['rival.listed']), // 1, batch 1
      line({ ...examples['vote.cast'], id: 'v-1' }), // 2, batch 1
      '', // 3 blank
      line(bad), // 4, batch 2: rejected
      line({ ...examples['vote.cast'], id: 'v-2' }), // 5, batch 2
      line(examples['ask.updated']), // 6, batch 3
    ];
    writeFileSync(file, texts.join('\n'));
    let batches = 0;
    const flaky: EventLog = {
      ...log,
      appendBatch: (groups) => {
        batches += 1;
        return batches === 2 ? Promise.reject(new Error('disk I/O error')) : log.appendBatch(groups);
      },
    };
    const deadLetterPath = join(dir, 'dl.ndjson');
    const failed = await run(file, deadLetterPath, { log: flaky, batchSize: 2 });
    assert.deepEqual(failed, {
      ok: false,
      counts: { lines: 4, accepted: 2, duplicate: 0, rejected: 0 },
      file,
      line: 4,
      reason: 'disk I/O error',
    });
    assert.equal(existsSync(deadLetterPath), false, 'the reject of the failed batch is not dead-lettered yet');
    const headAfterFailure = await log.headPosition();
    assert.equal((await log.readAll({ afterPosition: 0, limit: 100 })).length, 2, 'batch 1 only');
    // Running the whole file again stores the rest once and dead-letters the reject once.
    const again = await run(file, deadLetterPath, { batchSize: 2 });
    assert.deepEqual(again, { ok: true, counts: { lines: 6, accepted: 2, duplicate: 2, rejected: 1 } });
    assert.ok((await log.headPosition()) > headAfterFailure);
    assert.equal((await log.readAll({ afterPosition: 0, limit: 100 })).length, 4);
    const letters = readFileSync(deadLetterPath, 'utf8').trim().split('\n');
    assert.equal(letters.length, 1);
    assert.equal((JSON.parse(letters[0]!) as { line: number }).line, 4);
  });

  it('reports progress at most once per interval', async () => {
    const text = Array.from({ length: 10 }, (_, n) => line({ ...examples['rival.listed'], id: `r-${n}` })).join('\n');
    let clock = 0;
    const seen: NdjsonProgress[] = [];
    const deadLetter = createDeadLetterFile(join(dir, 'dl.ndjson'));
    await ingestNdjson([{ name: '-', stream: Readable.from([text]) }], {
      ingestor: createIngestor(log, { followerProvider: 'followerscope' }),
      deadLetter,
      progressIntervalMs: 2000,
      // Each reading of the clock advances it by 700 ms: a report every third line.
      now: () => (clock += 700),
      onProgress: (p) => seen.push(p),
    });
    await deadLetter.close();
    assert.deepEqual(
      seen.map((p) => p.lines),
      [3, 6, 9],
    );
    assert.equal(seen[0]!.linesPerSecond, Math.round(3 / 2.1));
  });
});
