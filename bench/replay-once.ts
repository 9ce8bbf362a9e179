/**
 * One replay of a log into a new read-model file, in a process of its own as `pulseboard replay` runs
 * (a replay after another in one process meets the first one's heap): the history bench runs it.
 * `node bench/replay-once.ts EVENTS TARGET [--plain]`; prints the replay's milliseconds as JSON.
 * `--plain`: the projects projector without its history.
 */
import { createSqliteEventLog } from '../eventstore/sqlite/sqlite-event-log.ts';
import { anyProjector, type Projector } from '../projectors/projector.ts';
import { projectsProjector } from '../projectors/projects.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectionRunner } from '../projectors/runner.ts';
import { createSqliteReadStore } from '../readmodels/sqlite/sqlite-read-store.ts';
import { EMBEDDED_LIMITS } from '../service/stores.ts';

const [events, target, flag] = process.argv.slice(2);
if (!events || !target) throw new Error('usage: node bench/replay-once.ts EVENTS TARGET [--plain]');
const list: Projector[] =
  flag === '--plain'
    ? projectors.map((p) =>
        p.collection === projectsProjector.collection
          ? anyProjector({ ...projectsProjector, versioned: undefined })
          : p,
      )
    : [...projectors];
const log = createSqliteEventLog(events);
const store = createSqliteReadStore(target, { bulkBuild: true });
const started = performance.now();
await createProjectionRunner(log, store, list, EMBEDDED_LIMITS).catchUp();
await store.close();
const ms = performance.now() - started;
await log.close();
process.stdout.write(`${JSON.stringify({ ms })}\n`);
