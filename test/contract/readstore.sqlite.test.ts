import { sqliteStoreUnderTest } from './fixtures/sqlite-store.ts';
import { readStoreContract } from './readstore.contract.ts';

for (const [name, options] of [
  ['sqlite', {}],
  // PULSEBOARD_SQLITE_MAP_MB set: pages read through a memory map instead of SQLite's page cache.
  ['sqlite with a memory map', { mapBytes: 64 * 1024 * 1024 }],
  // A replay's new generation: commits written by a thread of their own (build-writer.ts).
  ['sqlite building a generation', { bulkBuild: true }],
] as const) {
  readStoreContract(name, async () => sqliteStoreUnderTest(options));
}
