import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { createMirrorProgress } from '../../bin/mirror/progress.ts';
import { runCli } from '../support/cli.ts';
import { postgresSkipReason, POSTGRES_URL } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';

const pgSkip = await postgresSkipReason();
const KEY = `pbk_${'a'.repeat(43)}`;
const oneLine = (text: string) => text.trimEnd().split('\n').length === 1;

describe('pulseboard mirror: wrong input is one line and exit 2', () => {
  it('refuses missing or malformed flags, naming them', async () => {
    for (const [args, pattern] of [
      [['--key', KEY, '--to', 'sqlite:x.sqlite'], /--url URL is required/],
      [['--url', 'ftp://x', '--key', KEY, '--to', 'sqlite:x.sqlite'], /--url must be an http/],
      [['--url', 'http://127.0.0.1:9', '--to', 'sqlite:x.sqlite'], /--key KEY is required/],
      [['--url', 'http://127.0.0.1:9', '--key', KEY, '--to', 'mysql://x'], /--to must be sqlite:FILE or a postgres/],
      [
        ['--url', 'http://127.0.0.1:9', '--key', KEY, '--to', 'sqlite:x.sqlite', '--limit', '500'],
        /--limit must be a whole number from 1 to 100/,
      ],
      [
        ['--url', 'http://127.0.0.1:9', '--key', KEY, '--to', 'sqlite:x.sqlite', '--wait', '0'],
        /--wait must be a whole number from 1 to 30/,
      ],
      [['--url', 'http://127.0.0.1:9', '--key', KEY, '--to', 'sqlite:x.sqlite', '--loop'], /Unknown option '--loop'/],
    ] as const) {
      const run = await runCli(['mirror', ...args]);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, pattern);
      assert.ok(oneLine(run.stderr), run.stderr);
    }
    const help = await runCli(['mirror', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /pulseboard_mirror_cursor/);
  });

  it('a URL where no service answers, and a store it cannot open', async () => {
    const dir = `/tmp/pulseboard-mirror-cli-${process.pid}`;
    const nobody = await runCli([
      'mirror',
      '--url',
      'http://127.0.0.1:9',
      '--key',
      KEY,
      '--to',
      `sqlite:/tmp/pb-mirror-${process.pid}.sqlite`,
      '--once',
    ]);
    assert.equal(nobody.code, 2, nobody.stderr);
    assert.match(
      nobody.stderr,
      /^pulseboard mirror: network_error: no answer from http:\/\/127\.0\.0\.1:9.*check --url/,
    );
    assert.ok(oneLine(nobody.stderr), nobody.stderr);

    const noFolder = await runCli([
      'mirror',
      '--url',
      'http://127.0.0.1:9',
      '--key',
      KEY,
      '--to',
      `sqlite:${dir}/missing/m.sqlite`,
    ]);
    assert.equal(noFolder.code, 2, noFolder.stderr);
    assert.match(noFolder.stderr, /^pulseboard mirror: cannot use the store sqlite:.*missing\/m\.sqlite: /);
    assert.ok(oneLine(noFolder.stderr), noFolder.stderr);
  });

  it('a PostgreSQL database that does not exist', skipFor(pgSkip), async () => {
    const url = POSTGRES_URL.replace(/\/[^/]*$/, '/no_such_database_pulseboard');
    const run = await runCli(['mirror', '--url', 'http://127.0.0.1:9', '--key', KEY, '--to', url]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /cannot use the store postgres:.*does not exist/);
    assert.ok(oneLine(run.stderr), run.stderr);
  });
});

describe('mirror progress', () => {
  it('rewrites one line on a terminal; on a pipe writes one line a minute', () => {
    let t = 0;
    const pipe: string[] = [];
    const piped = createMirrorProgress({ out: { write: (s: string) => pipe.push(s) }, terminal: false, now: () => t });
    for (let second = 1; second <= 150; second++) {
      t = second * 1000;
      piped.page(10, second > 140);
    }
    assert.deepEqual(pipe, ['mirror: 600 rows, 10 rows/s, lag 60 s\n', 'mirror: 1,200 rows, 10 rows/s, lag 120 s\n']);

    t = 0;
    const tty: string[] = [];
    const terminal = createMirrorProgress({ out: { write: (s: string) => tty.push(s) }, terminal: true, now: () => t });
    t = 1000;
    terminal.page(50, true);
    terminal.line('mirror: stopped');
    assert.deepEqual(tty, [
      '\rmirror: 50 rows, 50 rows/s, lag 0 s (caught up, following)\x1b[K',
      '\r\x1b[K',
      'mirror: stopped\n',
    ]);
  });
});
