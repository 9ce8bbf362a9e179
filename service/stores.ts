import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { EventLog } from '../eventstore/port.ts';
import { openEventLog } from '../eventstore/open.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectorRunner, type ProjectorRunner } from '../projectors/runner.ts';
import type { ReadStore } from '../readmodels/port.ts';
import { createMongoReadStore } from '../readmodels/mongodb/mongodb-read-store.ts';
import { createSqliteReadStore } from '../readmodels/sqlite/sqlite-read-store.ts';

export type Stores = {
  log: EventLog;
  store: ReadStore;
  runners: ProjectorRunner[];
  /** Applies everything the log holds now to every read model. */
  catchUp(): Promise<number>;
  close(): Promise<void>;
};

/** Opens the event log and read store the configuration selects (KurrentDB / MongoDB, else embedded SQLite). */
export async function openStores(config: Config): Promise<Stores> {
  const log = openEventLog(config);
  const store = config.MONGODB_URL !== undefined
    ? createMongoReadStore(config.MONGODB_URL)
    : createSqliteReadStore(join(config.PULSEBOARD_DATA_DIR, 'readmodels.sqlite'));
  return assembleStores(log, store);
}

export function assembleStores(log: EventLog, store: ReadStore): Stores {
  const runners = projectors.map((p) => createProjectorRunner(log, store, p));
  return {
    log,
    store,
    runners,
    async catchUp() {
      let applied = 0;
      for (const runner of runners) applied += await runner.catchUp();
      return applied;
    },
    async close() {
      await store.close();
      await log.close();
    },
  };
}
