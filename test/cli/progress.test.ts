/**
 * Issue 18, item 5: long commands report progress. The reporter writes one updating line on a
 * terminal and periodic plain lines elsewhere; ingest reports the share of the file read, and
 * Ctrl-C says how far it got (and a rerun finishes the job).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { createProgress, PIPE_INTERVAL_MS, TERMINAL_INTERVAL_MS } from '../../bin/progress.ts';
import { examples, line } from '../ingest/examples.ts';
import { CLI, runCli } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'pulseboard-progress-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function recorder() {
  let text = '';
  return { out: { write: (chunk: string) => (text += chunk) }, text: () => text };
}

describe('the progress reporter', () => {
  it('on a terminal: one line rewritten in place with percentage, rate and time left', () => {
    let clock = 0;
    const out = recorder();
    const progress = createProgress({ label: 'ingest', unit: 'lines', out: out.out, terminal: true, now: () => clock });
    assert.equal(progress.intervalMs, TERMINAL_INTERVAL_MS);
    clock = 1000;
    progress.report({ done: 1000, fraction: 0.25 });
    clock = 1100; // within the interval: not written
    progress.report({ done: 1100, fraction: 0.26 });
    clock = 2000;
    progress.report({ done: 2000, fraction: 0.5 });
    progress.end();
    assert.equal(
      out.text(),
      '\ringest: 25.0% (1,000 lines, 1,000 lines/s), about 3 s left\x1b[K' +
        '\ringest: 50.0% (2,000 lines, 1,000 lines/s), about 2 s left\x1b[K' +
        '\r\x1b[K',
    );
  });

  it('elsewhere: a plain line per interval, no carriage returns; without a total, counts and rate only', () => {
    let clock = 0;
    const out = recorder();
    const progress = createProgress({
      label: 'ingest',
      unit: 'lines',
      out: out.out,
      terminal: false,
      now: () => clock,
    });
    assert.equal(progress.intervalMs, PIPE_INTERVAL_MS);
    for (let second = 1; second <= 12; second += 1) {
      clock = second * 1000;
      progress.report({ done: second * 500, fraction: null });
    }
    progress.end();
    assert.equal(
      out.text(),
      'ingest: 500 lines, 500 lines/s\ningest: 3,000 lines, 500 lines/s\ningest: 5,500 lines, 500 lines/s\n',
    );
    assert.equal(progress.summary({ done: 6000, fraction: 0.75 }), '75.0% (6,000 lines, 500 lines/s), about 4 s left');
  });
});

describe('pulseboard ingest progress', () => {
  const messages = Array.from({ length: 25 }, (_, n) =>
    line({ ...examples['rival.listed'], id: `rival-${n}`, data: { projectId: `p${n}` } }),
  );

  it('reports the share of the file read on a pipe, reaching 100%', async () => {
    const file = join(dir, 'in.ndjson');
    writeFileSync(file, `${messages.join('\n')}\n`);
    const run = await runCli(['ingest', '--progress-interval', '0', file], {
      env: { PULSEBOARD_DATA_DIR: join(dir, 'pipe') },
    });
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('ingest: '));
    assert.ok(lines.length >= 2, run.stderr);
    assert.doesNotMatch(run.stderr, /\r/);
    assert.match(lines.at(-1)!, /^ingest: 100\.0% \(25 lines, [\d,]+ lines\/s\), about 0 s left$/);
  });

  it('Ctrl-C says how far it got; the same command again stores the rest', async () => {
    const dataDir = join(dir, 'interrupted');
    const child = spawn(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', CLI, 'ingest', '--batch-size', '10', '--progress-interval', '0', '-'],
      {
        env: { PATH: process.env['PATH'] ?? '', PULSEBOARD_DATA_DIR: dataDir },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    const exited = new Promise<[number | null, string | null]>((resolve) =>
      child.on('close', (code, signal) => resolve([code, signal])),
    );
    // 25 lines and stdin left open: two batches of 10 are stored before line 21 is read; 5 wait.
    const allRead = new Promise<void>((resolve) => {
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
        if (/ingest: 25 lines/.test(stderr)) resolve();
      });
    });
    child.stdin.write(`${messages.join('\n')}\n`);
    await allRead;
    child.kill('SIGINT');
    const [code] = await exited;
    child.stdin.destroy();
    assert.equal(code, 130, stderr);
    assert.match(
      stderr,
      /pulseboard ingest: interrupted at 25 lines, [\d,]+ lines\/s; 20 messages stored in whole batches\. Run the same command again to finish/,
    );

    const again = await runCli(['ingest', '-'], {
      env: { PULSEBOARD_DATA_DIR: dataDir },
      stdin: `${messages.join('\n')}\n`,
    });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, 'accepted 5, duplicate 20, rejected 0\n');
  });
});

describe('pulseboard generate progress', () => {
  it('writing to a file reports on stderr; into a pipe it stays quiet', async () => {
    const file = join(dir, 'generated.ndjson');
    const toFile = await runCli(['generate', '--projects', '300', '--out', file], {
      env: { PULSEBOARD_DATA_DIR: dir },
    });
    assert.equal(toFile.code, 0, toFile.stderr);
    assert.match(toFile.stderr, /^generate: \d+\.\d% \([\d,]+ messages, [\d,]+ messages\/s\), about .+ left$/m);
    const count = readFileSync(file, 'utf8').split('\n').length - 1;
    assert.match(toFile.stderr, new RegExp(`wrote ${count} messages`));

    const toPipe = await runCli(['generate', '--projects', '300'], { env: { PULSEBOARD_DATA_DIR: dir } });
    assert.equal(toPipe.code, 0);
    assert.equal(toPipe.stderr, '');
  });
});
