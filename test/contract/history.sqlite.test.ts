import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { historyContract } from './history.contract.ts';

// The second: a replay's new generation, whose commits a thread of their own writes (build-writer.ts).
for (const [name, options] of [
  ['sqlite', {}],
  ['sqlite building a generation', { bulkBuild: true }],
] as const) {
  historyContract(name, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-history-'));
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
