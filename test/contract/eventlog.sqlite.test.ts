import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'vitest';
import type { AppendResult, EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { eventLogContract } from './eventlog.contract.ts';

function openTempLog() {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-eventlog-'));
  const path = join(dir, 'events.sqlite');
  const log = createSqliteEventLog(path);
  const connections: EventLog[] = [];
  return {
    path,
    log,
    async connect() {
      const connection = createSqliteEventLog(path);
      connections.push(connection);
      return connection;
    },
    async dispose() {
      for (const connection of connections) await connection.close().catch(() => undefined);
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

eventLogContract('sqlite', async () => openTempLog(), { processClock: true });

const RACER = join(import.meta.dirname, 'fixtures', 'sqlite-append-racer.ts');

type Racer = { child: ChildProcessWithoutNullStreams; lines: AsyncIterableIterator<string> };

function startRacer(path: string, stream: string, expected: string, eventId: string): Racer {
  const child = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', RACER, path, stream, expected, eventId],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.on('exit', (code) => {
    if (code !== null && code !== 0) process.stderr.write(`racer exited with ${code}: ${stderr}\n`);
  });
  return { child, lines: createInterface({ input: child.stdout })[Symbol.asyncIterator]() };
}

/** Waits for a racer to end by itself; one still running after the test is killed by stopRacers. */
async function exited(racer: Racer): Promise<number | null> {
  if (racer.child.exitCode !== null || racer.child.signalCode !== null) return racer.child.exitCode;
  const [code] = (await once(racer.child, 'exit')) as [number | null];
  return code;
}

function stopRacers(racers: readonly Racer[]): void {
  for (const racer of racers) if (racer.child.exitCode === null && racer.child.signalCode === null) racer.child.kill();
}

async function nextLine(racer: Racer): Promise<string> {
  const next = await racer.lines.next();
  assert.equal(next.done, false, 'racer ended without answering');
  return next.value as string;
}

describe('EventLog sqlite: separate processes on one file', () => {
  it('sqlite: processes racing for the same expected revision: exactly one wins', { timeout: 120_000 }, async () => {
    const temp = openTempLog();
    try {
      for (let round = 0; round < 3; round += 1) {
        const stream = `race-${randomUUID()}`;
        const seed = await temp.log.append(
          stream,
          [{ id: randomUUID(), type: 'contract.race', data: {} }],
          'no_stream',
        );
        assert.equal(seed.ok, true);
        const ids = Array.from({ length: 4 }, () => randomUUID());
        const racers = ids.map((id) => startRacer(temp.path, stream, '0', id));
        try {
          for (const racer of racers) assert.equal(await nextLine(racer), 'ready');
          // Every process has the file open before any of them is told to append.
          for (const racer of racers) racer.child.stdin.write('go\n');
          const results = await Promise.all(
            racers.map(async (racer) => JSON.parse(await nextLine(racer)) as AppendResult),
          );
          const winners = results.filter((r) => r.ok);
          assert.equal(winners.length, 1, JSON.stringify(results));
          for (const loser of results.filter((r) => !r.ok)) {
            assert.deepEqual(loser, { ok: false, reason: 'wrong_expected_revision', actualRevision: 1 });
          }
          const stored = await temp.log.readStream(stream);
          assert.deepEqual(
            stored.map((e) => e.revision),
            [0, 1],
          );
          assert.equal(stored[1]!.id, ids[results.findIndex((r) => r.ok)]);
          assert.deepEqual(await Promise.all(racers.map(exited)), [0, 0, 0, 0]);
        } finally {
          stopRacers(racers);
        }
      }
    } finally {
      await temp.dispose();
    }
  });

  it('sqlite: a waiter in this process is woken by an append from another process', { timeout: 120_000 }, async () => {
    const temp = openTempLog();
    try {
      const head = await temp.log.headPosition();
      const racer = startRacer(temp.path, `wake-${randomUUID()}`, 'any', randomUUID());
      try {
        assert.equal(await nextLine(racer), 'ready');
        let woken = false;
        // An hour-long wait: only the other process's append can end it within the test's timeout.
        const waiting = temp.log.waitForAppend(head, 3_600_000).then(() => {
          woken = true;
        });
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(woken, false);
        racer.child.stdin.write('go\n');
        const result = JSON.parse(await nextLine(racer)) as AppendResult;
        assert.ok(result.ok);
        await waiting;
        assert.ok(result.events[0]!.position > head);
        assert.equal(await exited(racer), 0);
      } finally {
        stopRacers([racer]);
      }
    } finally {
      await temp.dispose();
    }
  });

  it('sqlite: processes retrying the same ids store them once', { timeout: 120_000 }, async () => {
    const temp = openTempLog();
    try {
      const stream = `retry-${randomUUID()}`;
      const id = randomUUID();
      const racers = Array.from({ length: 4 }, () => startRacer(temp.path, stream, 'any', id));
      try {
        for (const racer of racers) assert.equal(await nextLine(racer), 'ready');
        for (const racer of racers) racer.child.stdin.write('go\n');
        const results = await Promise.all(
          racers.map(async (racer) => JSON.parse(await nextLine(racer)) as AppendResult),
        );
        assert.ok(results.every((r) => r.ok));
        const duplicates = results.map((r) => (r.ok ? r.events[0]!.duplicate : null));
        assert.equal(duplicates.filter((d) => d === false).length, 1, 'one process stored it');
        assert.equal(duplicates.filter((d) => d === true).length, 3, 'the others saw a duplicate');
        assert.equal((await temp.log.readStream(stream)).length, 1);
        assert.deepEqual(await Promise.all(racers.map(exited)), [0, 0, 0, 0]);
      } finally {
        stopRacers(racers);
      }
    } finally {
      await temp.dispose();
    }
  });
});

describe('EventLog sqlite: batch appends are one transaction', () => {
  it('sqlite: a batch that fails part-way stores none of its groups', async () => {
    const temp = openTempLog();
    try {
      const stream = `batch-${randomUUID()}`;
      const head = await temp.log.headPosition();
      // A BigInt cannot be serialised: the third group throws after the first two were inserted.
      const groups = [
        { stream, events: [{ id: randomUUID(), type: 'contract.batchfail', data: { n: 1 } }] },
        { stream: `${stream}-b`, events: [{ id: randomUUID(), type: 'contract.batchfail', data: { n: 2 } }] },
        { stream, events: [{ id: randomUUID(), type: 'contract.batchfail', data: { n: 10n } }] },
      ];
      await assert.rejects(temp.log.appendBatch(groups), /BigInt/);
      assert.equal(await temp.log.headPosition(), head);
      assert.equal(await temp.log.streamRevision(stream), null);
      assert.equal(await temp.log.streamRevision(`${stream}-b`), null);
      // The same batch, fixed, then lands whole with revisions from 0.
      const fixed = [groups[0]!, groups[1]!, { stream, events: [{ ...groups[2]!.events[0]!, data: { n: 3 } }] }];
      const results = await temp.log.appendBatch(fixed);
      assert.deepEqual(
        results.map((g) => g.map((e) => [e.revision, e.duplicate])),
        [[[0, false]], [[0, false]], [[1, false]]],
      );
    } finally {
      await temp.dispose();
    }
  });

  it("sqlite: batches over two connections continue each other's stream revisions", async () => {
    const temp = openTempLog();
    try {
      const other = await temp.connect();
      const stream = `shared-${randomUUID()}`;
      const event = () => ({ id: randomUUID(), type: 'contract.shared', data: {} });
      const revisions: number[] = [];
      for (let round = 0; round < 3; round++) {
        revisions.push(...(await temp.log.appendBatch([{ stream, events: [event()] }]))[0]!.map((e) => e.revision));
        const single = await other.append(stream, [event()]);
        assert.ok(single.ok);
        revisions.push(single.events[0]!.revision);
        revisions.push(...(await other.appendBatch([{ stream, events: [event()] }]))[0]!.map((e) => e.revision));
      }
      assert.deepEqual(revisions, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
      assert.deepEqual(
        (await temp.log.readStream(stream)).map((e) => e.revision),
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
      );
    } finally {
      await temp.dispose();
    }
  });

  it('sqlite: a batch larger than one look-up chunk finds every stored id and stream', async () => {
    const temp = openTempLog();
    try {
      const groups = Array.from({ length: 1203 }, (_, n) => ({
        stream: `chunk-${n % 601}`,
        events: [{ id: randomUUID(), type: 'contract.chunk', data: { n } }],
      }));
      const first = await temp.log.appendBatch(groups.slice(0, 700));
      assert.ok(first.flat().every((e) => !e.duplicate));
      const all = await temp.log.appendBatch(groups);
      assert.deepEqual(
        all.slice(0, 700),
        first.map((g) => g.map((e) => ({ ...e, duplicate: true }))),
      );
      assert.ok(
        all
          .slice(700)
          .flat()
          .every((e) => !e.duplicate),
      );
      // Stream n % 601 got one event per group in order: revisions 0, 1 (and 2 for the first two streams).
      for (const [n, group] of all.entries()) assert.equal(group[0]!.revision, Math.floor(n / 601), `group ${n}`);
    } finally {
      await temp.dispose();
    }
  });
});
