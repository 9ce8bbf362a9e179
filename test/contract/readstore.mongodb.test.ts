import { randomUUID } from 'node:crypto';
import { afterAll } from 'vitest';
import { createMongoReadStore } from '../../readmodels/mongodb/mongodb-read-store.ts';
import { skipUnlessDocker, startMongo } from '../support/containers.ts';
import { readStoreContract } from './readstore.contract.ts';

const skip = await skipUnlessDocker('MongoDB');

// One server for the file; every opened store gets a database of its own.
let server: ReturnType<typeof startMongo> | undefined;
afterAll(async () => {
  if (server) await (await server).stop();
});

readStoreContract(
  'mongodb',
  async () => {
    server ??= startMongo();
    const database = `pulseboard_contract_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const store = createMongoReadStore((await server).url(database));
    return {
      store,
      async dispose() {
        await store.close();
      },
    };
  },
  { skip },
);
