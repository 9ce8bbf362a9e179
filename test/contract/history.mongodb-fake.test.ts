/**
 * The history contract on the MongoDB read store over the in-memory driver stand-in
 * (test/support/mongodb-fake.ts): runs where no Docker answers; history.mongodb.test.ts runs the
 * same suite on a real server.
 */
import { mongoReadStoreOn } from '../../readmodels/mongodb/mongodb-read-store.ts';
import { fakeMongo } from '../support/mongodb-fake.ts';
import { historyContract } from './history.contract.ts';

historyContract('mongodb (in-memory driver stand-in)', async () => {
  const store = mongoReadStoreOn(fakeMongo().client, 0, { ownsClient: false });
  return {
    store,
    async dispose() {
      await store.close();
    },
  };
});
