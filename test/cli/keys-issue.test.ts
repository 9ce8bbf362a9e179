import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { runCli } from '../support/cli.ts';

describe('pulseboard keys issue', () => {
  it('prints the key alone on stdout and its key id on stderr, which revoke takes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-keys-issue-'));
    try {
      const env = { PULSEBOARD_DATA_DIR: dir };
      const issued = await runCli(['keys', 'issue', '--owner', 'ann'], { env });
      assert.equal(issued.code, 0, issued.stderr);
      assert.match(issued.stdout, /^pbk_[A-Za-z0-9_-]{43}\n$/);
      const id = /^key id (\S+) \(owner ann\); revoke it with: pulseboard keys revoke \1$/m.exec(issued.stderr)?.[1];
      assert.ok(id, issued.stderr);
      const listed = await runCli(['keys', 'list'], { env });
      assert.match(listed.stdout, new RegExp(`^${id}\\tann\\t`, 'm'));
      const revoked = await runCli(['keys', 'revoke', id], { env });
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.match((await runCli(['keys', 'list'], { env })).stdout, new RegExp(`^${id}\\tann\\t.*\\trevoked `, 'm'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
