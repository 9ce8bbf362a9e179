import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import type { EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { sourceEventId } from '../../events/ids.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { changeOwner, issueKey } from '../../service/access.ts';
import { exportEvents } from '../../service/export.ts';
import { prng } from '../support/seed.ts';
import { examples, THESIS } from '../ingest/examples.ts';
import { pulseboard } from './support.ts';

const START = Date.parse('2026-11-01T00:00:00Z');
const at = (i: number) => new Date(START + i * 1000).toISOString();
const SECOND_THESIS = 'Second private thesis: the team wallet is accumulating.';
const FEED_TEXT = 'Feed item text that only linked members may read.';
const VOTER = 'Secret Voter Name';
const QUESTION = 'Is the team doxxed?';

/**
 * The log, one event (or access change) per second from START. `thesis.*` events are written by
 * hand: the prefix is the rule, whatever the thesis feed's own event types turn out to be.
 */
async function seed(dir: string): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'], now: START });
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  // Access commands settle their read models; these ones are not looked at here.
  const accessStore = createSqliteReadStore(':memory:');
  const append = async (stream: string, type: string, id: string, data: Record<string, unknown>) => {
    const result = await log.append(stream, [
      { id: sourceEventId(type, id), type, data, metadata: { source: 'test', messageId: id } },
    ]);
    assert.ok(result.ok);
  };
  const call = (id: string, thesisText: string) => ({ ...examples['call.recorded'].data, id, thesisText, at: at(0) });
  const steps: (() => Promise<unknown>)[] = [
    () => append('project-p1', 'project.sighted', 's1', { projectId: 'p1', at: at(0), fol: 10 }),
    () => append('call-c1', 'call.recorded', 'c1', call('11111111-1111-4111-8111-111111111111', THESIS)),
    () => append('thesis-0xabc', 'thesis.requested', 't1', { contract: '0xabc', owner: 'member', at: at(2) }),
    () =>
      append('thesis-0xabc', 'thesis.snapshot.saved', 't2', {
        contract: '0xabc',
        items: [{ id: 'i1', text: FEED_TEXT }],
        at: at(3),
      }),
    () =>
      append('project-p1', 'vote.cast', 'v1', {
        projectId: 'p1',
        at: at(4),
        voterId: 'u1',
        name: VOTER,
        avatar: 'https://a.example/v.png',
        direction: 'up',
      }),
    () => issueKey({ log, store: accessStore }, 'analyst'),
    () => changeOwner({ log, store: accessStore }, 'analyst', 'allow'),
    () => append('call-c2', 'call.recorded', 'c2', call('22222222-2222-4222-8222-222222222222', SECOND_THESIS)),
    () => append('thesis-0xabc', 'thesis.failed', 't3', { contract: '0xabc', reason: 'source down', at: at(8) }),
    () =>
      append('project-p1', 'ask.asked', 'a1', {
        projectId: 'p1',
        askId: 'q1',
        question: QUESTION,
        owner: 'analyst',
        at: at(9),
      }),
    () => append('project-p2', 'project.sighted', 's2', { projectId: 'p2', at: at(10), fol: 20 }),
  ];
  try {
    for (const step of steps) {
      await step();
      vi.advanceTimersByTime(1000);
    }
  } finally {
    await log.close();
    await accessStore.close();
    vi.useRealTimers();
  }
}

const lines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));

describe('pulseboard export', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-export-'));
    await seed(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the range [from, to) in log order and leaves out thesis-feed and access events without --include-private', async () => {
    const run = await pulseboard(['export', '--from', at(1), '--to', at(9)], dir);
    assert.equal(run.code, 0, run.stderr);
    const events = lines(run.stdout);
    assert.deepEqual(
      events.map((e) => e.type),
      ['call.recorded', 'vote.cast', 'call.recorded'],
    );
    for (const event of events) {
      assert.deepEqual(Object.keys(event), [
        'id',
        'stream',
        'revision',
        'position',
        'type',
        'data',
        'metadata',
        'recordedAt',
      ]);
      assert.ok(event.recordedAt >= at(1) && event.recordedAt < at(9));
    }
    assert.deepEqual(
      events.map((e) => e.position),
      [...events.map((e) => e.position)].sort((a, b) => a - b),
    );
    // Thesis text and other private values are nowhere in the output, nor on stderr.
    for (const secret of [THESIS, SECOND_THESIS, FEED_TEXT, VOTER]) {
      assert.ok(!run.stdout.includes(secret), `stdout carries ${secret}`);
      assert.ok(!run.stderr.includes(secret), `stderr carries ${secret}`);
    }
    assert.equal(events[0].data.thesisText, '[withheld]');
    assert.equal(
      events[0].data.sourceUrl,
      examples['call.recorded'].data.sourceUrl,
      'the rest of the record is exported',
    );
    assert.equal(events[1].data.name, '[withheld]');
    assert.equal(events[1].data.direction, 'up');
    // The command says what it left out and withheld.
    assert.match(
      run.stderr,
      /private events are left out \(thesis\.\*, key\.\*, owner\.\*\): 5 in this range \(thesis\.\* 3, key\.\* 1, owner\.\* 1\)/,
    );
    assert.match(run.stderr, /4 withheld \(call\.recorded thesisText 2, vote\.cast name 1, vote\.cast avatar 1\)/);
    assert.match(run.stderr, /add --include-private to include them/);
  });

  it('includes every event and private field with --include-private, and says so', async () => {
    const run = await pulseboard(['export', '--from', at(1), '--to', at(9), '--include-private'], dir);
    assert.equal(run.code, 0, run.stderr);
    const events = lines(run.stdout);
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'call.recorded',
        'thesis.requested',
        'thesis.snapshot.saved',
        'vote.cast',
        'key.issued',
        'owner.allowed',
        'call.recorded',
        'thesis.failed',
      ],
    );
    assert.equal(events[0].data.thesisText, THESIS);
    assert.equal(events[2].data.items[0].text, FEED_TEXT);
    assert.equal(events[3].data.name, VOTER);
    assert.match(run.stderr, /--include-private: .*thesis text included.*do not publish it/);
  });

  it('filters by type prefix, withholds research questions, and writes a file only once complete', async () => {
    const filtered = await pulseboard(['export', '--from', at(0), '--to', at(20), '--types', 'call.,thesis.'], dir);
    assert.equal(filtered.code, 0, filtered.stderr);
    assert.deepEqual(
      lines(filtered.stdout).map((e) => e.type),
      ['call.recorded', 'call.recorded'],
    );
    assert.match(filtered.stderr, /3 in this range \(thesis\.\* 3\)/);

    const asks = await pulseboard(['export', '--from', at(0), '--to', at(20), '--types', 'ask.'], dir);
    const [ask] = lines(asks.stdout);
    assert.equal(ask.data.question, '[withheld]');
    assert.equal(ask.data.owner, '[withheld]');
    assert.ok(!asks.stdout.includes(QUESTION));

    const out = join(dir, 'range.ndjson');
    const toFile = await pulseboard(['export', '--from', at(0), '--to', at(20), '--out', out], dir);
    assert.equal(toFile.code, 0, toFile.stderr);
    assert.equal(toFile.stdout, '');
    const all = await pulseboard(['export', '--from', at(0), '--to', at(20)], dir);
    assert.equal(readFileSync(out, 'utf8'), all.stdout);
    assert.equal(lines(all.stdout).length, 6);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.includes('.partial')),
      [],
    );
    const empty = await pulseboard(['export', '--from', '2030-01-01T00:00:00Z', '--to', '2031-01-01T00:00:00Z'], dir);
    assert.equal(empty.code, 0);
    assert.equal(empty.stdout, '');
  });

  it('refuses bad arguments with exit status 2 and a message naming the option', async () => {
    const cases: [string[], RegExp][] = [
      [['export', '--from', at(0)], /--to is required/],
      [['export', '--from', 'yesterday', '--to', at(1)], /--from must be an ISO 8601 date-time/],
      [['export', '--from', at(2), '--to', at(1)], /--from must be earlier than --to/],
      [['export', '--from', at(0), '--to', at(1), '--types', 'a b'], /--types must be/],
      [['export', '--from', at(0), '--to', at(1), '--bogus'], /Unknown option '--bogus'/],
    ];
    for (const [args, message] of cases) {
      const run = await pulseboard(args, dir);
      assert.equal(run.code, 2, args.join(' '));
      assert.match(run.stderr, message);
    }
    assert.ok(!existsSync(join(dir, 'readmodels.current')));
  });
});

describe('exportEvents', () => {
  it('finds exactly the events recorded in [from, to) for many ranges, also when instants repeat', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-export-range-'));
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    const log = createSqliteEventLog(join(dir, 'events.sqlite'));
    try {
      const rand = prng(12);
      for (let i = 0; i < 400; i++) {
        const type = rand() < 0.5 ? 'project.sighted' : 'rival.listed';
        await log.append(`project-p${i % 9}`, [
          { id: sourceEventId(type, `r${i}`), type, data: { projectId: `p${i % 9}`, at: at(0) }, metadata: {} },
        ]);
        // Several events often share one instant.
        if (rand() < 0.4) vi.advanceTimersByTime(Math.floor(rand() * 3) * 500);
      }
      vi.useRealTimers();
      const all = await log.readAll({ afterPosition: 0, limit: 10_000 });
      const last = Date.parse(all[all.length - 1]!.recordedAt);
      for (let round = 0; round < 40; round++) {
        // Half the ranges start and end exactly at recorded instants, the boundary cases.
        const instant = () => Date.parse(all[Math.floor(rand() * all.length)]!.recordedAt);
        const a = round % 2 === 0 ? instant() : START - 1000 + Math.floor(rand() * (last - START + 2000));
        const b = round % 2 === 0 ? Math.max(a + 1, instant()) : a + 1 + Math.floor(rand() * 40_000);
        const types = round % 3 === 0 ? ['rival.'] : undefined;
        const lines: string[] = [];
        const summary = await exportEvents(
          log,
          {
            from: new Date(a).toISOString(),
            to: new Date(b).toISOString(),
            includePrivate: false,
            batchSize: 7,
            ...(types ? { typePrefixes: types } : {}),
          },
          { write: async (line) => void lines.push(line) },
        );
        const expected = all.filter(
          (e) =>
            Date.parse(e.recordedAt) >= a && Date.parse(e.recordedAt) < b && (!types || e.type.startsWith(types[0]!)),
        );
        assert.deepEqual(
          lines.map((l) => JSON.parse(l).position),
          expected.map((e) => e.position),
          `range ${new Date(a).toISOString()} – ${new Date(b).toISOString()}`,
        );
        assert.equal(summary.written, expected.length);
      }
    } finally {
      vi.useRealTimers();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('exportEvents: seeking', () => {
  it('starts every read at 0 or at a stored position and never reads events recorded before the range', async () => {
    // KurrentDB refuses a $all read from a position inside a record; this log refuses the same way,
    // so an export that invented positions (the old binary search) fails here.
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-export-seek-'));
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    const inner = createSqliteEventLog(join(dir, 'events.sqlite'));
    try {
      for (let i = 0; i < 300; i++) {
        await inner.append(`project-p${i % 7}`, [
          {
            id: sourceEventId('project.sighted', `k${i}`),
            type: 'project.sighted',
            data: { projectId: `p${i % 7}`, at: at(0) },
            metadata: {},
          },
        ]);
        vi.advanceTimersByTime(1000);
      }
      vi.useRealTimers();
      const all = await inner.readAll({ afterPosition: 0, limit: 10_000 });
      const stored = new Set(all.map((e) => e.position));
      const delivered: string[] = [];
      const strict: EventLog = {
        ...inner,
        readAll: async (options) => {
          if (options.afterPosition !== 0 && !stored.has(options.afterPosition))
            throw new Error(`read from ${options.afterPosition}: not a record boundary`);
          const page = await inner.readAll(options);
          delivered.push(...page.map((e) => e.recordedAt));
          return page;
        },
      };
      const from = all[250]!.recordedAt;
      const to = all[260]!.recordedAt;
      const lines: string[] = [];
      const summary = await exportEvents(
        strict,
        { from, to, includePrivate: true, batchSize: 4 },
        { write: async (line) => void lines.push(line) },
      );
      assert.equal(summary.written, 10);
      assert.deepEqual(
        lines.map((l) => JSON.parse(l).position),
        all.slice(250, 260).map((e) => e.position),
      );
      assert.equal(delivered.filter((t) => t < from).length, 0, 'nothing before the range was read');
    } finally {
      vi.useRealTimers();
      await inner.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
