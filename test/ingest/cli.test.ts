import { runCli } from '../support/cli.ts';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { example, examples, line, THESIS } from './examples.ts';
import { tempDir } from './helpers.ts';

const pulseboard = (args: string[], env: Record<string, string>, stdin?: string) =>
  runCli(args, { env, ...(stdin === undefined ? {} : { stdin }) });

describe('pulseboard ingest (child process)', () => {
  let dir: string;
  let cleanup: () => void;
  let env: Record<string, string>;
  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
    env = { PULSEBOARD_DATA_DIR: join(dir, 'data') };
  });
  afterEach(() => cleanup());

  it('ingests a file, then finds every message already stored', async () => {
    const file = join(dir, 'all.ndjson');
    writeFileSync(file, `${Object.values(examples).map(line).join('\n')}\n`);
    const first = await pulseboard(['ingest', file], env);
    assert.equal(first.stdout, 'accepted 14, duplicate 0, rejected 0\n');
    assert.equal(first.code, 0, first.stderr);
    const second = await pulseboard(['ingest', file], env);
    assert.equal(second.stdout, 'accepted 0, duplicate 14, rejected 0\n');
    assert.equal(second.code, 0);

    const log = createSqliteEventLog(join(dir, 'data', 'events.sqlite'));
    try {
      assert.equal((await log.readAll({ afterPosition: 0, limit: 100 })).length, 14);
    } finally {
      await log.close();
    }
    assert.equal(existsSync(join(dir, 'data', 'dead-letter.ndjson')), false);
  });

  it('exits 1 on rejects and writes them to the default dead-letter file without thesis text', async () => {
    const bad = example('call.recorded');
    bad.data.tokens = [];
    const file = join(dir, 'mixed.ndjson');
    writeFileSync(file, [line(examples['rival.listed']), line(bad), '{oops'].join('\n'));
    const result = await pulseboard(['ingest', file], env);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, 'accepted 1, duplicate 0, rejected 2\n');
    const deadLetter = readFileSync(join(dir, 'data', 'dead-letter.ndjson'), 'utf8');
    const entries = deadLetter
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { line: number; path: string; file: string });
    assert.deepEqual(
      entries.map((e) => [e.file, e.line, e.path]),
      [
        [file, 2, 'data.tokens'],
        [file, 3, '(message)'],
      ],
    );
    assert.equal(deadLetter.includes(THESIS), false);
    assert.equal(result.stderr.includes(THESIS), false);
  });

  it('reads stdin with - and honours --dead-letter', async () => {
    const deadLetter = join(dir, 'elsewhere', 'dl.ndjson');
    const input = `${line(examples['vote.cast'])}\n\n${line({ ...examples['vote.cast'], type: 'vote.counted' })}\n`;
    const result = await pulseboard(['ingest', '--dead-letter', deadLetter, '-'], env, input);
    assert.equal(result.stdout, 'accepted 1, duplicate 0, rejected 1\n');
    assert.equal(result.code, 1);
    const [entry] = readFileSync(deadLetter, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { file: string; line: number; path: string });
    assert.deepEqual(entry && [entry.file, entry.line, entry.path], ['-', 3, 'type']);
  });

  it('exits 2 on usage errors and appends nothing', async () => {
    const good = join(dir, 'good.ndjson');
    writeFileSync(good, line(examples['rival.listed']));
    const missing = await pulseboard(['ingest', good, join(dir, 'missing.ndjson')], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing\.ndjson does not exist/);
    assert.equal(existsSync(join(dir, 'data', 'events.sqlite')), false, 'nothing ingested before the check');

    assert.equal((await pulseboard(['ingest'], env)).code, 2);
    assert.equal((await pulseboard(['ingest', dir], env)).code, 2);
    assert.equal((await pulseboard(['ingest', '--frobnicate', good], env)).code, 2);
    for (const size of ['0', '-3', '1.5', 'many', '100001']) {
      const bad = await pulseboard(['ingest', `--batch-size=${size}`, good], env);
      assert.equal(bad.code, 2, size);
      assert.match(bad.stderr, /--batch-size must be a whole number from 1 to 100000/);
    }
    assert.equal(existsSync(join(dir, 'data', 'events.sqlite')), false, 'nothing ingested on a usage error');
  });

  it('stops with status 1 naming the line when the configured event log cannot be reached', async () => {
    const good = join(dir, 'good-unreachable.ndjson');
    writeFileSync(good, line(examples['rival.listed']));
    // A KurrentDB URL on a loopback port where nothing listens.
    const result = await pulseboard(['ingest', good], { ...env, EVENTSTORE_URL: 'kurrentdb://127.0.0.1:1?tls=false' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /good-unreachable\.ndjson:1: event log failed/);
  });
});
