import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { historyContract } from './history.contract.ts';

historyContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-history-'));
  const store = createSqliteReadStore(join(dir, 'readmodels.sqlite'));
  return {
    store,
    async dispose() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
