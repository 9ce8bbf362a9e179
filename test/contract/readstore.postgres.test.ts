import { afterAll } from 'vitest';
import { createPostgresReadStore } from '../../readmodels/postgres/postgres-read-store.ts';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.ts';
import { readStoreContract } from './readstore.contract.ts';

const skip = await postgresSkipReason();

// Every store the suite opens gets a database of its own, dropped (with any connection left on it) at the end.
const databases: ScratchDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});

readStoreContract(
  'postgres',
  async () => {
    const database = await scratchDatabase('pulseboard_readstore');
    databases.push(database);
    const store = createPostgresReadStore(database.url);
    return {
      store,
      async dispose() {
        await store.close();
      },
    };
  },
  { skip },
);
