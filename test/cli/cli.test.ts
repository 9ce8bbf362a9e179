/**
 * Issue 18, item 4: the CLI explains itself. --help (and `help CMD`) on stdout with exit 0 and no
 * side effect, --version, an unknown command or flag named in one line on stderr with exit 2.
 * Every case runs against a data directory that must stay absent: nothing is opened or started.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'pulseboard-cli-'));
const dataDir = join(dir, 'data');
// A port the server could bind: a `serve --help` that started the server would hang the test.
const env = { PULSEBOARD_DATA_DIR: dataDir, PORT: '0' };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const COMMANDS = ['serve', 'keys', 'owners', 'ingest', 'replay', 'export', 'generate'] as const;
const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
  version: string;
};

function assertUsageError(run: { code: number | null; stdout: string; stderr: string }, pattern: RegExp): void {
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.stdout, '');
  assert.equal(run.stderr.trim().split('\n').length, 1, `one line: ${run.stderr}`);
  assert.match(run.stderr, pattern);
}

describe('pulseboard --help, help and --version', () => {
  for (const args of [['--help'], ['-h'], ['help']]) {
    it(`${args.join(' ')} lists every command on stdout, exit 0`, async () => {
      const run = await runCli(args, { env });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, '');
      for (const name of COMMANDS) assert.match(run.stdout, new RegExp(`^  ${name} `, 'm'));
    });
  }

  it('--version prints the package version, exit 0', async () => {
    const run = await runCli(['--version'], { env });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `pulseboard ${version}\n`);
  });

  it('no command at all prints the usage on stderr, exit 2', async () => {
    const run = await runCli([], { env });
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^usage: pulseboard <command>/);
  });

  for (const name of COMMANDS) {
    it(`${name} --help and help ${name}: the command's usage on stdout, exit 0, nothing started`, async () => {
      for (const args of [
        [name, '--help'],
        [name, '-h'],
        ['help', name],
      ]) {
        const run = await runCli(args, { env });
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
        assert.equal(run.stderr, '', args.join(' '));
        assert.match(run.stdout, new RegExp(`^usage: pulseboard ${name}`), args.join(' '));
      }
    });
  }

  it('--help answers even when the environment holds a bad setting (nothing is configured for help)', async () => {
    for (const name of COMMANDS) {
      const run = await runCli([name, '--help'], { env: { ...env, PULSEBOARD_RATE_LIMIT: 'lots' } });
      assert.equal(run.code, 0, `${name}: ${run.stderr}`);
      assert.match(run.stdout, new RegExp(`^usage: pulseboard ${name}`));
    }
  });

  for (const args of [
    ['keys', 'issue', '--help'],
    ['keys', 'list', '--help'],
    ['keys', 'revoke', '--help'],
  ]) {
    it(`${args.join(' ')} prints the keys usage, exit 0`, async () => {
      const run = await runCli(args, { env });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^usage: pulseboard keys issue/);
    });
  }
  afterAll(() => assert.equal(existsSync(dataDir), false, 'help never opens the data directory'));
});

describe('unknown commands and flags', () => {
  it('an unknown command is named, with the list of commands', async () => {
    assertUsageError(
      await runCli(['frobnicate'], { env }),
      /^pulseboard: unknown command 'frobnicate'; commands: serve, keys, owners, ingest, replay, export, generate/,
    );
  });

  it('an unknown top-level option is named', async () => {
    assertUsageError(await runCli(['--bogus'], { env }), /^pulseboard: unknown option '--bogus'/);
  });

  const cases: [string[], RegExp][] = [
    [['serve', '--bogus'], /^pulseboard serve: Unknown option '--bogus' \(see 'pulseboard serve --help'\)/],
    [
      ['serve', '--role', 'web'],
      /^pulseboard serve: --role must be one of all, api, projectors, thesis-reader, ingest, got 'web'/,
    ],
    [['serve', 'extra'], /^pulseboard serve: Unexpected argument 'extra'/],
    [['keys', 'list', '--bogus'], /^pulseboard keys: Unknown option '--bogus'/],
    [['keys', 'issue', '--owner'], /^pulseboard keys: Option '--owner <value>' argument missing/],
    [['keys', 'issue', '--owner', 'ann', '--bogus'], /^pulseboard keys: Unknown option '--bogus'/],
    [['keys', 'revoke'], /^pulseboard keys: revoke needs exactly one KEY_ID/],
    [['keys', 'rotate'], /^pulseboard keys: unknown action 'rotate'; use issue, revoke or list/],
    [['keys'], /^pulseboard keys: name an action: issue, revoke or list/],
    [['owners', 'allow'], /^pulseboard owners: allow needs the owner's NAME/],
    [['owners', 'ban', 'ann'], /^pulseboard owners: unknown action 'ban'/],
    [['owners', 'allow', 'ann', '--bogus'], /^pulseboard owners: Unknown option '--bogus'/],
    [['ingest', '--bogus', 'x.ndjson'], /^pulseboard ingest: Unknown option '--bogus'/],
    [['replay', '--batch-size'], /^pulseboard replay: Option '--batch-size <value>' argument missing/],
    [
      ['export', '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-02T00:00:00Z', '--bogus'],
      /^pulseboard export: Unknown option '--bogus'/,
    ],
    [['generate', '--projects', '10', '--bogus'], /^pulseboard generate: Unknown option '--bogus'/],
    // Commands that only read the archive refuse a data directory without one instead of creating it empty.
    [['replay'], /^pulseboard replay: no event log at .*events\.sqlite: set PULSEBOARD_DATA_DIR/],
    [
      ['export', '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-02T00:00:00Z'],
      /^pulseboard export: no event log at .*events\.sqlite: set PULSEBOARD_DATA_DIR/,
    ],
    [
      ['export', '--format', 'parquet', '--out', join(dir, 'out')],
      /^pulseboard export: no event log at .*events\.sqlite: set PULSEBOARD_DATA_DIR/,
    ],
  ];
  for (const [args, pattern] of cases) {
    it(`${args.join(' ')}: one line naming the problem, exit 2`, async () => {
      assertUsageError(await runCli(args, { env }), pattern);
    });
  }
  afterAll(() => assert.equal(existsSync(dataDir), false, 'a usage error never opens the data directory'));
});
