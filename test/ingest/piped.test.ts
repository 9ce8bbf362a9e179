/**
 * `tail -f source.ndjson | pulseboard ingest -`: lines read from a pipe that stays open are stored
 * once the input goes idle, at the default batch size, not only when a batch fills or stdin closes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, it } from 'vitest';
import { CLI } from '../support/cli.ts';
import { examples, line } from './examples.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir()));
afterEach(() => cleanup());

/** Events in the log, read without writing to it (0 until the ingest process has created it). */
function storedEvents(path: string): number {
  if (!existsSync(path)) return 0;
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  } catch {
    // The schema is not there yet.
    return 0;
  } finally {
    db.close();
  }
}

it('stores what a held-open pipe has sent once it goes idle, then the rest when it closes', async () => {
  const data = join(dir, 'data');
  const events = join(data, 'events.sqlite');
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'ingest', '-'], {
    env: { PATH: process.env['PATH'] ?? '', PULSEBOARD_DATA_DIR: data },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  try {
    const messages = Object.values(examples).map(line);
    const first = messages.slice(0, 3);
    child.stdin.write(`${first.join('\n')}\n`);
    // The pipe stays open: the three messages must reach the log without another line or EOF.
    // A generous bound, not a timing: old code holds them until 16,000 lines or the end of input.
    let stored = 0;
    for (let waited = 0; stored === 0 && waited < 60_000; waited += 100) {
      await sleep(100);
      stored = storedEvents(events);
    }
    assert.ok(stored > 0, `nothing stored while the pipe stayed open; stderr: ${stderr}`);
    assert.equal(child.exitCode, null, 'ingest is still reading the open pipe');

    child.stdin.end(`${messages.slice(3).join('\n')}\n`);
    assert.equal(await exited, 0, stderr);
    assert.equal(stdout, `accepted ${messages.length}, duplicate 0, rejected 0\n`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
