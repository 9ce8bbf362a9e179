/**
 * Commands that cannot start say why in one line and exit non-zero: a bad setting is refused before
 * anything is opened (exit 2, naming the variable), an unreachable store after (exit 1). Never a stack.
 * The servers are addresses on loopback port 1, which refuses at once: nothing needs to run.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'pulseboard-cli-errors-'));
// An (empty) embedded log, so replay gets as far as the read store: without one it refuses the directory first.
writeFileSync(join(dir, 'events.sqlite'), '');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Port 1 on loopback refuses at once; the short selection timeout keeps the driver from waiting 30 s.
const UNREACHABLE_MONGO = 'mongodb://127.0.0.1:1/pulseboard?serverSelectionTimeoutMS=300';

function assertOneLine(stderr: string, pattern: RegExp): void {
  assert.match(stderr, pattern);
  assert.doesNotMatch(stderr, /^\s+at /m, `no stack trace: ${stderr}`);
  assert.equal(stderr.trim().split('\n').length, 1, stderr);
}

describe('commands that cannot start', () => {
  for (const args of [['replay'], ['serve'], ['keys', 'list']]) {
    it(`${args.join(' ')}: a malformed MONGODB_URL is refused with exit 2`, async () => {
      const run = await runCli(args, { env: { PULSEBOARD_DATA_DIR: dir, MONGODB_URL: 'mongodb://bad host:x/db' } });
      assert.equal(run.code, 2, run.stderr);
      assertOneLine(run.stderr, /MONGODB_URL: must be a MongoDB connection string/);
    });

    it(`${args.join(' ')}: an unreachable MongoDB ends it with exit 1 and one line`, async () => {
      const run = await runCli(args, { env: { PULSEBOARD_DATA_DIR: dir, MONGODB_URL: UNREACHABLE_MONGO } });
      assert.equal(run.code, 1, run.stderr);
      assertOneLine(run.stderr, new RegExp(`^pulseboard ${args[0]}: .*ECONNREFUSED`));
    });
  }

  it('an unreachable KurrentDB is named in one line, without the credentials in its URL', async () => {
    const run = await runCli(['keys', 'list'], {
      env: { PULSEBOARD_DATA_DIR: dir, EVENTSTORE_URL: 'kurrentdb://admin:secret@127.0.0.1:1?tls=false' },
    });
    assert.equal(run.code, 1, run.stderr);
    assertOneLine(run.stderr, /^pulseboard keys: KurrentDB at kurrentdb:\/\/127\.0\.0\.1:1\?tls=false does not answer/);
    assert.doesNotMatch(run.stderr, /secret/);
  });
});
