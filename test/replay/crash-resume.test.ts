/**
 * Kills `pulseboard ingest` and `pulseboard replay` at seeded points (SIGKILL, so nothing is
 * flushed or rolled back by the process itself), finishes the work with a fresh run, and compares
 * the result byte for byte with clean runs: the event log rows, then every read-model row.
 * Kill points are chosen by progress (log head, replay batches), never by elapsed time, and the
 * number of kills is bounded, so the test ends whatever the machine's speed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
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
const DOC_ROWS = 'SELECT collection, id, doc, state, seq, written_at, sort_key, facet, keys FROM docs ORDER BY collection, id';
const DOC_ROWS_WITHOUT_TIME = 'SELECT collection, id, doc, state, seq, sort_key, facet, keys FROM docs ORDER BY collection, id';
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
 * Starts `pulseboard ingest FILE` and SIGKILLs it `delayMs` after the log's head reaches `killAt`
 * (if it gets there): the seeded delay moves the kill off batch boundaries, into parsing or a transaction.
 */
async function ingestKilledAt(dataDir: string, file: string, killAt: number, delayMs: number): Promise<CliRun> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'ingest', '--batch-size', '500', file], {
    env: { PATH: process.env['PATH'] ?? '', PULSEBOARD_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  const eventsPath = join(dataDir, 'events.sqlite');
  while (child.exitCode === null && child.signalCode === null) {
    if (headOf(eventsPath) >= killAt) {
      await sleep(delayMs);
      child.kill('SIGKILL');
      break;
    }
    await sleep(2);
  }
  return exited;
}

void describe(`ingest and replay killed at seeded points (seed ${SEED})`, () => {
  let root: string;
  let file: string;
  let cleanDir: string;
  let crashDir: string;
  let total: number;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'pulseboard-crash-'));
    file = join(root, 'data.ndjson');
    writeFileSync(
      file,
      [...generateLines({ projects: 120, seed: 3, calls: 400, days: 20, hotContractCalls: 0, followerProvider: 'followerscope' })].join(''),
    );
    cleanDir = join(root, 'clean');
    crashDir = join(root, 'crash');
    const clean = await pulseboard(['ingest', file], cleanDir);
    assert.equal(clean.code, 0, clean.stderr);
    total = headOf(join(cleanDir, 'events.sqlite'));
    assert.ok(total > 3000, `the data set has ${total} events: several batches of 500 messages`);
  });

  after(() => {
    rmSync(root, { recursive: true, force: true });
  });

  void it('a killed ingest, run again, leaves the same log rows as one clean ingest', { timeout: 240_000 }, async (t) => {
    const random = prng(SEED);
    let killed = 0;
    const kills: string[] = [];
    for (let round = 0; round < KILLS; round++) {
      const before = headOf(join(crashDir, 'events.sqlite'));
      // Somewhere in the rest of the file, at least one event past where this run starts.
      const killAt = before + 1 + Math.floor(random() * Math.max(1, total - before - 1));
      const run = await ingestKilledAt(crashDir, file, killAt, Math.floor(random() * 40));
      if (run.signal === 'SIGKILL') {
        killed += 1;
        kills.push(`head ${killAt} asked, ${headOf(join(crashDir, 'events.sqlite'))} stored`);
      } else assert.equal(run.code, 0, run.stderr);
    }
    t.diagnostic(`ingest killed ${killed} times of ${KILLS} (${kills.join('; ')}) in a log of ${total} events`);
    assert.ok(killed > 0, 'at least one ingest was killed part-way');
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

  void it('a killed replay, run again, builds the same read models as a clean replay', { timeout: 240_000 }, async (t) => {
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
      t.diagnostic(`replay round ${round + 1}: kill at progress line ${killAt} of about ${lines}: ${run.signal ?? `exit ${run.code}`}`);
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
    for (const sql of [DOC_ROWS, KEY_ROWS, CHECKPOINT_ROWS]) assert.deepEqual(dump(crashModels, sql), dump(referenceModels, sql), sql);
    assert.deepEqual(dump(crashModels, DOC_ROWS_WITHOUT_TIME), dump(cleanModels, DOC_ROWS_WITHOUT_TIME));
  });
});
