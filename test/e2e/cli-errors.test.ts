/**
 * Commands that cannot start say why in one line and exit non-zero: a bad setting is refused before
 * anything is opened (exit 2, naming the variable), an unreachable store after (exit 1). Never a stack.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseConfig } from '../../config/config.ts';
import { runCli } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'pulseboard-cli-errors-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Port 1 on loopback refuses at once; the short selection timeout keeps the driver from waiting 30 s.
const UNREACHABLE_MONGO = 'mongodb://127.0.0.1:1/pulseboard?serverSelectionTimeoutMS=300';

function assertOneLine(stderr: string, pattern: RegExp): void {
  assert.match(stderr, pattern);
  assert.doesNotMatch(stderr, /^\s+at /m, `no stack trace: ${stderr}`);
  assert.equal(stderr.trim().split('\n').length, 1, stderr);
}

describe('MONGODB_URL in the configuration', () => {
  it('accepts the connection strings the driver accepts', () => {
    for (const url of [
      'mongodb://mongodb:27017/pulseboard?replicaSet=rs0',
      'mongodb://a:1,b:2,c:3/pulseboard?replicaSet=rs0&directConnection=false',
      'mongodb://user:p%40ss@localhost/pulseboard',
      'mongodb+srv://cluster0.example.net/pulseboard?retryWrites=true',
      'mongodb://localhost',
    ]) {
      const parsed = parseConfig({ MONGODB_URL: url });
      assert.ok(parsed.ok, `${url}: ${parsed.ok ? '' : parsed.reason}`);
    }
  });

  it('refuses what is not one, naming the variable', () => {
    for (const url of ['localhost:27017', 'http://localhost:27017/db', 'mongodb://bad host/db', 'mongodb:///db', 'mongodb://']) {
      const parsed = parseConfig({ MONGODB_URL: url });
      assert.equal(parsed.ok, false, url);
      assert.match(parsed.ok ? '' : parsed.reason, /MONGODB_URL: must be a MongoDB connection string/);
    }
  });
});

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
});
