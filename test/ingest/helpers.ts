import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventLog } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';

/** A temp directory under os.tmpdir() and an embedded log in it; `cleanup` closes and removes both. */
export function tempLog(): { dir: string; log: EventLog; cleanup: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-ingest-'));
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  return {
    dir,
    log,
    cleanup: async () => {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-ingest-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
