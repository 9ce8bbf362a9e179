import { sqliteStoreUnderTest } from './fixtures/sqlite-store.ts';
import { historyContract } from './history.contract.ts';

// The second: a replay's new generation, whose commits a thread of their own writes (build-writer.ts).
for (const [name, options] of [
  ['sqlite', {}],
  ['sqlite building a generation', { bulkBuild: true }],
] as const) {
  historyContract(name, async () => sqliteStoreUnderTest(options));
}
