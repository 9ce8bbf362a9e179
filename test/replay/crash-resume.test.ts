/**
 * Kills `pulseboard ingest` and `pulseboard replay` at seeded points (SIGKILL, so nothing is
 * flushed or rolled back by the process itself), finishes the work with a fresh run, and compares
 * the result byte for byte with clean runs: the event log rows, then every read-model row.
 * Kill points are seeded: how much input ingest was given (and a short delay), the replay's
 * progress line; the number of kills is bounded, so the test ends whatever the machine's speed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateLines } from '../../ingest/generate/generate.ts';
import { prng } from '../support/seed.ts';
import { CLI, pulseboard, startReplay, type CliRun } from './support.ts';

const SEED = Number(process.env['PULSEBOARD_TEST_SEED'] ?? 1313);
const KILLS = 3;

/** Every row of a table, as JSON text in a fixed order: equal texts mean equal bytes. */
function dump(path: string, sql: string): string[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare(sql).all() as Record<string, unknown>[]).map((row) => JSON.stringify(row));
  } finally {
    db.close();
  }
}

const EVENT_ROWS = 'SELECT position, id, stream, revision, type, data, metadata FROM events ORDER BY position';
const DOC_ROWS =
  'SELECT collection, id, doc, state, seq, written_at, sort_key, facet, keys FROM docs ORDER BY collection, id';
const DOC_ROWS_WITHOUT_TIME =
  'SELECT collection, id, doc, state, seq, sort_key, facet, keys FROM docs ORDER BY collection, id';
const KEY_ROWS = 'SELECT collection, key, value, id FROM doc_keys ORDER BY collection, key, value, id';
const CHECKPOINT_ROWS = 'SELECT collection, position FROM checkpoints ORDER BY collection';

/** The log's head as another process sees it now (0 before the file or its table exists). */
function headOf(eventsPath: string): number {
  if (!existsSync(eventsPath)) return 0;
  try {
    const db = new DatabaseSync(eventsPath, { readOnly: true });
    try {
      return (db.prepare('SELECT COALESCE(MAX(position), 0) AS head FROM events').get() as { head: number }).head;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/**
 * Runs `pulseboard ingest -` (500-message batches) and writes it the first `count` lines of the data
 * set without ending its input; once it has stored a batch of them, SIGKILLs it `delayMs` later. It
 * is always killed part-way: while committing a batch, parsing one, or waiting for the rest of one.
 */
async function ingestKilledAfter(
  dataDir: string,
  lines: readonly string[],
  count: number,
  delayMs: number,
): Promise<CliRun> {
  const eventsPath = join(dataDir, 'events.sqlite');
  const headBefore = headOf(eventsPath);
  const child = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', CLI, 'ingest', '--batch-size', '500', '-'],
    {
      env: { PATH: process.env['PATH'] ?? '', PULSEBOARD_DATA_DIR: dataDir },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  child.stdin.on('error', () => undefined);
  child.stdin.write(lines.slice(0, count).join(''));
  while (child.exitCode === null && child.signalCode === null && headOf(eventsPath) <= headBefore) await sleep(5);
  await sleep(delayMs);
  child.kill('SIGKILL');
  return exited;
}

describe(`ingest and replay killed at seeded points (seed ${SEED})`, () => {
  let root: string;
  let file: string;
  let cleanDir: string;
  let crashDir: string;
  let total: number;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'pulseboard-crash-'));
    file = join(root, 'data.ndjson');
    writeFileSync(
      file,
      [
        ...generateLines({
          projects: 180,
          seed: 3,
          calls: 500,
          days: 20,
          hotContractCalls: 0,
          followerProvider: 'followerscope',
        }),
      ].join(''),
    );
    cleanDir = join(root, 'clean');
    crashDir = join(root, 'crash');
    const clean = await pulseboard(['ingest', file], cleanDir);
    assert.equal(clean.code, 0, clean.stderr);
    total = headOf(join(cleanDir, 'events.sqlite'));
    assert.ok(total > 3 * 1400, `the data set has ${total} events: room for three rounds of up to 1400 more messages`);
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('a killed ingest, run again, leaves the same log rows as one clean ingest', { timeout: 240_000 }, async (t) => {
    const random = prng(SEED);
    const lines = readFileSync(file, 'utf8').split(/(?<=\n)/);
    let count = 0;
    for (let round = 0; round < KILLS; round++) {
      // At least a batch past the previous round, so each round stores something new before its kill;
      // sometimes two, so the kill may land inside the second one's transaction.
      count = Math.min(lines.length, count + 500 + Math.floor(random() * 900));
      const delayMs = Math.floor(random() * 60);
      const run = await ingestKilledAfter(crashDir, lines, count, delayMs);
      assert.equal(run.signal, 'SIGKILL', run.stderr);
      await t.annotate(
        `ingest round ${round + 1}: ${count} of ${lines.length} lines written, killed ${delayMs} ms later; log head ${headOf(join(crashDir, 'events.sqlite'))}`,
      );
    }
    const finish = await pulseboard(['ingest', '--batch-size', '300', file], crashDir);
    assert.equal(finish.code, 0, finish.stderr);
    assert.match(finish.stdout, /, rejected 0\n$/);
    const crashRows = dump(join(crashDir, 'events.sqlite'), EVENT_ROWS);
    const cleanRows = dump(join(cleanDir, 'events.sqlite'), EVENT_ROWS);
    assert.equal(crashRows.length, cleanRows.length, 'every message applied exactly once');
    assert.deepEqual(crashRows, cleanRows);
    // recordedAt never goes backwards across kills and resumptions.
    const times = dump(join(crashDir, 'events.sqlite'), 'SELECT recorded_at FROM events ORDER BY position');
    assert.deepEqual(times, [...times].sort());
  });

  it('a killed replay, run again, builds the same read models as a clean replay', { timeout: 240_000 }, async (t) => {
    const random = prng(SEED + 1);
    const clean = await pulseboard(['replay', '--batch-size', '500'], cleanDir);
    assert.equal(clean.code, 0, clean.stderr);
    // Progress lines come one per collection commit: ten read models, total / 500 batches.
    const lines = Math.ceil(total / 500) * 10;
    let killed = 0;
    for (let round = 0; round < KILLS; round++) {
      const killAt = 1 + Math.floor(random() * (lines - 1));
      const replay = startReplay(crashDir, {
        batchSize: 500,
        onProgress: (line, child) => {
          if (line === killAt) child.kill('SIGKILL');
        },
      });
      const run = await replay.exited;
      if (run.signal === 'SIGKILL') killed += 1;
      else assert.equal(run.code, 0, run.stderr);
      await t.annotate(
        `replay round ${round + 1}: kill at progress line ${killAt} of about ${lines}: ${run.signal ?? `exit ${run.code}`}`,
      );
    }
    assert.ok(killed > 0, 'at least one replay was killed part-way');
    const finish = await pulseboard(['replay', '--batch-size', '700'], crashDir);
    assert.equal(finish.code, 0, finish.stderr);

    // The live generation's file: a finished replay removed every other one.
    const generationFile = (dir: string) => {
      const files = readdirSync(dir).filter((name) => /^readmodels(-\d+)?\.sqlite$/.test(name));
      assert.equal(files.length, 1, `one generation left in ${dir}: ${files.join(', ')}`);
      return join(dir, files[0]!);
    };
    const crashModels = generationFile(crashDir);
    const cleanModels = generationFile(cleanDir);
    // Replays of the same log agree byte for byte, writtenAt included; the kill-free log of the
    // clean directory differs only in recordedAt (its ingest ran at other times), so documents
    // from both logs agree except for written_at.
    const cleanOfCrashLog = join(root, 'clean-of-crash-log');
    mkdirSync(cleanOfCrashLog);
    const copy = new DatabaseSync(join(crashDir, 'events.sqlite'));
    copy.exec(`VACUUM INTO '${join(cleanOfCrashLog, 'events.sqlite').replaceAll("'", "''")}'`);
    copy.close();
    const reference = await pulseboard(['replay'], cleanOfCrashLog);
    assert.equal(reference.code, 0, reference.stderr);
    const referenceModels = generationFile(cleanOfCrashLog);
    for (const sql of [DOC_ROWS, KEY_ROWS, CHECKPOINT_ROWS])
      assert.deepEqual(dump(crashModels, sql), dump(referenceModels, sql), sql);
    assert.deepEqual(dump(crashModels, DOC_ROWS_WITHOUT_TIME), dump(cleanModels, DOC_ROWS_WITHOUT_TIME));
  });
});
