import { randomUUID } from 'node:crypto';
import { afterAll } from 'vitest';
import { MongoClient } from 'mongodb';
import type { GenerationSpace } from '../../readmodels/generations/port.ts';
import { createMongoGenerationSpace } from '../../readmodels/mongodb/mongodb-generations.ts';
import { GENERATIONS_COLLECTION } from '../../readmodels/mongodb/mongodb-layout.ts';
import { skipUnlessDocker, startMongo } from '../support/containers.ts';
import { generationSpaceContract } from './generations.contract.ts';

const skip = await skipUnlessDocker('MongoDB');

// One server for the file; every space gets a database of its own.
let server: ReturnType<typeof startMongo> | undefined;
afterAll(async () => {
  if (server) await (await server).stop();
});

generationSpaceContract(
  'mongodb',
  async ({ clock }) => {
    server ??= startMongo();
    const url = (await server).url(`pulseboard_generations_${randomUUID().replaceAll('-', '').slice(0, 12)}`);
    const opened: GenerationSpace[] = [];
    const reopen = () => {
      const space = createMongoGenerationSpace(url, { clock });
      opened.push(space);
      return space;
    };
    return {
      space: reopen(),
      reopen,
      async plantDeadLock() {
        const client = new MongoClient(url);
        try {
          await client
            .db()
            .collection<{ _id: string; holder: string; host: string; pid: number; expiresAt: Date }>(
              GENERATIONS_COLLECTION,
            )
            .insertOne({
              _id: 'replay-lock',
              holder: 'killed',
              host: 'elsewhere',
              pid: 1,
              expiresAt: new Date(clock() - 1000),
            });
        } finally {
          await client.close();
        }
      },
      async dispose() {
        const client = new MongoClient(url);
        try {
          await client.db().dropDatabase();
        } finally {
          await client.close();
        }
        for (const space of opened) await space.close();
      },
    };
  },
  { skip },
);
