import pg from 'pg';
import type { GenerationSpace } from '../../readmodels/generations/port.ts';
import { createPostgresGenerationSpace } from '../../readmodels/postgres/postgres-generations.ts';
import { postgresSkipReason, scratchDatabase } from '../support/postgres.ts';
import { generationSpaceContract } from './generations.contract.ts';

const skip = await postgresSkipReason();

generationSpaceContract(
  'postgres',
  async ({ clock }) => {
    const database = await scratchDatabase('pulseboard_generations');
    const opened: GenerationSpace[] = [];
    const reopen = () => {
      const space = createPostgresGenerationSpace(database.url, { clock });
      opened.push(space);
      return space;
    };
    const space = reopen();
    return {
      space,
      reopen,
      async plantDeadLock() {
        // As a replay killed elsewhere leaves it: held by a holder whose lease has run out.
        await space.readPointer();
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        try {
          await client.query(
            `UPDATE pulseboard.replay_lock SET token = token + 1, holder = 'killed', host = 'elsewhere', pid = 1, expires_at = $1 WHERE id = 1`,
            [clock() - 1000],
          );
        } finally {
          await client.end();
        }
      },
      async dispose() {
        for (const opened_ of opened) await opened_.close();
        await database.drop();
      },
    };
  },
  { skip },
);
