/**
 * `pulseboard export --format` runs in a worker thread with a bounded heap: a thread that outgrows it
 * ends the command with status 1 and a message, and leaves no partial file behind.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it, vi } from 'vitest';
import { inExportThread } from '../../bin/commands/export-as-of.ts';

describe('the export thread', () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('ends the export with status 1 and removes its partial files when it runs out of its heap', async () => {
    const out = mkdtempSync(join(tmpdir(), 'pulseboard-export-thread-'));
    dirs.push(out);
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((text) => {
      written.push(String(text));
      return true;
    });
    const status = await inExportThread(
      { format: 'parquet', asOf: undefined, out },
      new URL('./fixtures/export-thread-out-of-heap.ts', import.meta.url),
    );
    assert.equal(status, 1);
    assert.deepEqual(readdirSync(out), []);
    assert.match(written.join(''), /pulseboard export: .*memory limit/);
  });
});
