import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { readStoreContract } from './readstore.contract.ts';

for (const [name, options] of [
  ['sqlite', {}],
  // PULSEBOARD_SQLITE_MAP_MB set: pages read through a memory map instead of SQLite's page cache.
  ['sqlite with a memory map', { mapBytes: 64 * 1024 * 1024 }],
  // A replay's new generation: commits written by a thread of their own (build-writer.ts).
  ['sqlite building a generation', { bulkBuild: true }],
] as const) {
  readStoreContract(name, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-readstore-'));
    const store = createSqliteReadStore(join(dir, 'readmodels.sqlite'), options);
    return {
      store,
      async dispose() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
}
