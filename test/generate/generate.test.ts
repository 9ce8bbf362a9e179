import { runCli } from '../support/cli.ts';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import {
  defaultCalls,
  FIXTURE_CHAINS,
  fixtureContracts,
  MIN_CALLS,
  MIN_DAYS,
  MIN_PROJECTS,
  type GenerateOptions,
} from '../../ingest/generate/context.ts';
import { generateLines, generateMessages } from '../../ingest/generate/generate.ts';
import type { SourceMessage } from '../../ingest/messages.ts';
import { ingestNdjson, type DeadLetterEntry, type DeadLetterSink } from '../../ingest/ndjson.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { tempDir } from '../ingest/helpers.ts';
import { assertEveryRule } from './coverage.ts';

const SAMPLE = fileURLToPath(new URL('../../sample/sample.ndjson', import.meta.url));

const smallest: GenerateOptions = {
  projects: MIN_PROJECTS,
  seed: 7,
  calls: MIN_CALLS,
  days: MIN_DAYS,
  hotContractCalls: 25,
  followerProvider: 'followerscope',
};

const sampleOptions: GenerateOptions = {
  projects: 300,
  seed: 1,
  calls: defaultCalls(300),
  days: 30,
  hotContractCalls: 0,
  followerProvider: 'followerscope',
};

function digest(lines: Iterable<string>): { sha256: string; lines: number } {
  const hash = createHash('sha256');
  let count = 0;
  for (const line of lines) {
    hash.update(line);
    count += 1;
  }
  return { sha256: hash.digest('hex'), lines: count };
}

function parsedLines(text: string): SourceMessage[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as SourceMessage);
}

/** Ingests generated lines into a fresh in-memory log; every one must be newly accepted. */
async function ingestAll(
  lines: Iterable<string>,
  followerProvider: string,
): Promise<{ counts: unknown; rejects: DeadLetterEntry[] }> {
  const log = createSqliteEventLog(':memory:');
  const rejects: DeadLetterEntry[] = [];
  const sink: DeadLetterSink = {
    write: (entry) => {
      rejects.push(entry);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
  try {
    const result = await ingestNdjson([{ name: 'generated', stream: Readable.from(lines) }], {
      ingestor: createIngestor(log, { followerProvider }),
      deadLetter: sink,
    });
    return { counts: result.counts, rejects };
  } finally {
    await log.close();
  }
}

describe('pulseboard generate', () => {
  it('is deterministic: the same options give the same bytes, another seed other bytes', () => {
    const a = digest(generateLines(smallest));
    const b = digest(generateLines(smallest));
    const other = digest(generateLines({ ...smallest, seed: 8 }));
    assert.deepEqual(a, b);
    assert.notEqual(a.sha256, other.sha256);
    assert.ok(a.lines > 500);
  });

  it('writes only messages that ingest accepts, each once', async () => {
    const { counts, rejects } = await ingestAll(generateLines(smallest), smallest.followerProvider);
    assert.deepEqual(rejects, []);
    const lines = digest(generateLines(smallest)).lines;
    assert.deepEqual(counts, { lines, accepted: lines, duplicate: 0, rejected: 0 });
  });

  it('names the configured follower provider', async () => {
    const options = { ...smallest, followerProvider: 'tallyfollow' };
    const sources = new Set(
      [...generateMessages(options)].filter((m) => m.type === 'followers.observed').map((m) => m.data.source),
    );
    assert.deepEqual([...sources], ['tallyfollow']);
    const { rejects } = await ingestAll(generateLines(options), 'tallyfollow');
    assert.equal(rejects.length, 0);
  });

  it('exercises every rule at the smallest allowed size', () => {
    const contracts = fixtureContracts(smallest.seed);
    assertEveryRule(generateMessages(smallest), {
      followerProvider: smallest.followerProvider,
      days: smallest.days,
      hotContract: { chain: FIXTURE_CHAINS.hot, contract: contracts.hot, count: smallest.hotContractCalls },
    });
  });

  it('has a coverage check that notices a missing rule', () => {
    const all = [...generateMessages(smallest)];
    const check = (messages: SourceMessage[]) => () =>
      assertEveryRule(messages, { followerProvider: 'followerscope', days: smallest.days });
    assert.doesNotThrow(check(all));
    const without = (drop: (m: SourceMessage) => boolean) => check(all.filter((m) => !drop(m)));
    assert.throws(
      without((m) => m.id.includes('-late-')),
      /older than one already sent/,
    );
    assert.throws(
      without((m) => m.type === 'vote.cast' && m.data.direction === 'none'),
      /withdrawn/,
    );
    assert.throws(without((m) => m.type === 'research.updated' && m.data.state === 'paused'));
    assert.throws(
      without((m) => m.type === 'pulse.published' && m.data.card.status === 'quiet'),
      /quiet/,
    );
    assert.throws(
      without((m) => m.type === 'call.restored'),
      /restored/,
    );
    assert.throws(
      without((m) => m.type === 'followers.observed' && Date.parse(m.data.checkedAt) > Date.parse(m.at)),
      /checked after/,
    );
    assert.throws(
      without((m) => m.type === 'project.sighted' && m.data.projectId === `prj-s7-0000${MIN_PROJECTS - 1}`),
      /claimed by another/,
    );
  });

  it('adds exactly N hot-contract calls, enough to cross the 5000 candidate limit', () => {
    const options = { ...smallest, hotContractCalls: 5001 };
    const { hot } = fixtureContracts(options.seed);
    let named = 0;
    let hotMessages = 0;
    for (const m of generateMessages(options)) {
      if (m.type !== 'call.recorded') continue;
      if (m.id.startsWith(`s${options.seed}-hot-`)) {
        hotMessages += 1;
        assert.ok(m.data.tokens.some((t) => t.chain === FIXTURE_CHAINS.hot && t.contract === hot));
      }
      if (m.data.tokens.some((t) => t.contract === hot)) named += 1;
    }
    assert.equal(hotMessages, 5001);
    assert.ok(named > 5000);
  });
});

describe('bundled sample', () => {
  it('is what `generate --projects 300 --seed 1` writes, byte for byte', async () => {
    const expected = digest(generateLines(sampleOptions));
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(SAMPLE)) hash.update(chunk as Buffer);
    assert.equal(
      hash.digest('hex'),
      expected.sha256,
      'regenerate with: pulseboard generate --projects 300 --seed 1 --out sample/sample.ndjson',
    );
  });

  it('stays small, is accepted whole and exercises every rule', async () => {
    const text = readFileSync(SAMPLE, 'utf8');
    assert.ok(text.length < 3_000_000, `sample is ${text.length} bytes`);
    const messages = parsedLines(text);
    assertEveryRule(messages, { followerProvider: 'followerscope', days: sampleOptions.days });
    const { counts, rejects } = await ingestAll(
      messages.map((m) => `${JSON.stringify(m)}\n`),
      'followerscope',
    );
    assert.deepEqual(rejects, []);
    assert.deepEqual(counts, { lines: messages.length, accepted: messages.length, duplicate: 0, rejected: 0 });
  });
});

const cli = (args: string[]) => runCli(args);

describe('pulseboard generate (child process)', () => {
  it('writes the same lines to stdout and to --out', async () => {
    const args = [
      'generate',
      '--projects',
      '30',
      '--seed',
      '7',
      '--calls',
      '60',
      '--days',
      '8',
      '--hot-contract-calls',
      '25',
    ];
    const expected = digest(generateLines(smallest));
    const stdout = await cli(args);
    assert.equal(stdout.code, 0, stdout.stderr);
    assert.equal(createHash('sha256').update(stdout.stdout).digest('hex'), expected.sha256);

    const { dir, cleanup } = tempDir();
    try {
      const file = `${dir}/out.ndjson`;
      const toFile = await cli([...args, '--out', file]);
      assert.equal(toFile.code, 0, toFile.stderr);
      assert.equal(toFile.stdout, '');
      assert.equal(createHash('sha256').update(readFileSync(file)).digest('hex'), expected.sha256);
    } finally {
      cleanup();
    }
  });

  it('exits 2 on bad options', async () => {
    for (const args of [
      ['generate'],
      ['generate', '--projects', '29'],
      ['generate', '--projects', 'many'],
      ['generate', '--projects', '30', '--days', '3'],
      ['generate', '--projects', '30', '--calls', '10'],
      ['generate', '--projects', '30', '--bogus'],
      ['generate', '--projects', '30', '--out', '/nonexistent-dir/x.ndjson'],
    ]) {
      const result = await cli(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stdout, '');
    }
  });
});
