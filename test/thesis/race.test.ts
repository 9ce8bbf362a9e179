import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { dailyCount, globalScope } from '../../service/thesis/quota.ts';
import { contractOf, harness, item, scriptedSource, tempDir } from './helpers.ts';

const NOW = '2026-11-22T12:00:00.000Z';
const dir = tempDir();
const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill();
  dir.remove();
});

type Outcome = { ok: boolean; lostRaces: number; httpStatus?: number; status?: number; retryAfter?: number };

/** A child API process; `said(word)` resolves once it has printed that line. */
function startChild(owner: string, contract: string) {
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      join(import.meta.dirname, 'race-child.ts'),
      dir.path,
      owner,
      contract,
      NOW,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  children.push(child);
  let out = '';
  let err = '';
  const checks = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const check of checks) check();
  });
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const said = (word: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!out.split('\n').includes(word)) return;
        checks.delete(check);
        resolve();
      };
      checks.add(check);
      check();
      void exited.then((code) => reject(new Error(`child exited ${code} before "${word}": ${err}`)));
    });
  const done = exited.then((code) => {
    if (code !== 0) throw new Error(`child exited ${code}: ${err}`);
    return JSON.parse(out.trim().split('\n').pop()!) as Outcome;
  });
  return { child, said, done, send: (word: string) => child.stdin.write(`${word}\n`) };
}

it('two processes on one event log racing for the 60th daily start: exactly one wins', async () => {
  // 59 starts through the real feed and reader, some of them failures (failures count).
  const { source } = scriptedSource((contract) =>
    contract.endsWith('5')
      ? { ok: false, outcome: 'source answered HTTP 503' }
      : { ok: true, items: [item(1)], moreAtSource: false, sourceUrl: 'https://source.example/t' },
  );
  const h = await harness({ source, start: NOW, dir: dir.path });
  for (let n = 1; n <= 59; n++) {
    const caller = await h.member(`setup-${Math.ceil(n / 20)}`);
    const result = await h.feed.request(caller, { contract: contractOf(n) });
    assert.ok(result.ok && result.value.httpStatus === 202);
    await h.reader.runOnce();
  }
  assert.ok((await h.events()).some((e) => e.type === 'thesis.failed'));
  await h.member('racer-1');
  await h.member('racer-2');
  assert.equal(await dailyCount(h.log, { scope: globalScope, day: '2026-11-22' }), 59);
  await h.close();

  const racers = [startChild('racer-1', contractOf(1001)), startChild('racer-2', contractOf(1002))];
  await Promise.all(racers.map((r) => r.said('ready')));
  for (const r of racers) r.send('go');
  // Both have read 59 starts and are about to append the 60th.
  await Promise.all(racers.map((r) => r.said('at-append')));
  for (const r of racers) r.send('append');
  const outcomes = await Promise.all(racers.map((r) => r.done));

  const winners = outcomes.filter((o) => o.ok && o.httpStatus === 202);
  const losers = outcomes.filter((o) => !o.ok);
  assert.equal(winners.length, 1, JSON.stringify(outcomes));
  assert.equal(losers.length, 1, JSON.stringify(outcomes));
  assert.equal(losers[0]!.status, 429);
  assert.equal(losers[0]!.retryAfter, 12 * 3600, 'until the next UTC midnight');
  assert.ok(
    losers[0]!.lostRaces >= 1,
    'the loser was refused by the log (wrong expected revision), then found the quota full',
  );

  const log = createSqliteEventLog(join(dir.path, 'events.sqlite'));
  try {
    assert.equal(await dailyCount(log, { scope: globalScope, day: '2026-11-22' }), 60);
    const requested = await log.readAll({ afterPosition: 0, typePrefixes: ['thesis.requested'], limit: 1000 });
    const raced = requested.filter((e) =>
      [contractOf(1001), contractOf(1002)].includes((e.data as { contract: string }).contract),
    );
    assert.equal(raced.length, 1);
  } finally {
    await log.close();
  }
});
