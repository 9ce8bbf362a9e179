import { randomUUID } from 'node:crypto';
import { afterAll } from 'vitest';
import { MongoClient } from 'mongodb';
import { createMongoReadStore } from '../../readmodels/mongodb/mongodb-read-store.ts';
import { skipUnlessDocker, startMongo } from '../support/containers.ts';
import { historyContract } from './history.contract.ts';

const skip = await skipUnlessDocker('MongoDB');

// One server for the file; the store gets a database of its own.
let server: ReturnType<typeof startMongo> | undefined;
afterAll(async () => {
  if (server) await (await server).stop();
});

historyContract(
  'mongodb',
  async () => {
    server ??= startMongo();
    const url = (await server).url(`pulseboard_history_${randomUUID().replaceAll('-', '').slice(0, 12)}`);
    const store = createMongoReadStore(url);
    return {
      store,
      async dispose() {
        await store.close();
        const client = new MongoClient(url);
        try {
          await client.db().dropDatabase();
        } finally {
          await client.close();
        }
      },
    };
  },
  { skip },
);
