/**
 * Runs every projector to the end of the log in small batches, printing one line per batch, so
 * a parent can kill it with SIGKILL at a chosen batch (not at a chosen time).
 */
import { parseConfig } from '../../config/config.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectorRunner } from '../../projectors/runner.ts';
import { openStores } from '../../service/stores.ts';

const parsed = parseConfig({ PULSEBOARD_DATA_DIR: process.argv[2] });
if (!parsed.ok) throw new Error(parsed.reason);
const stores = await openStores(parsed.config);
for (const projector of projectors) {
  const runner = createProjectorRunner(stores.log, stores.store, projector, {
    batchSize: 7,
    onBatch: () => process.stdout.write('batch\n'),
  });
  await runner.catchUp();
}
await stores.close();
process.stdout.write('done\n');
