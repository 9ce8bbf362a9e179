/**
 * One API process for the 60th-start race (race.test.ts). It opens the shared SQLite event log,
 * says "ready" and waits for "go", then sends one POST. Its first append to the global quota
 * stream is held until the parent says "append" (after "at-append"), so that both processes have
 * read the count (59) before either appends: the race is certain, not left to scheduling.
 * Prints the outcome as one JSON line. argv: dataDir owner contract nowIso
 */
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseConfig } from '../../config/config.ts';
import { streams } from '../../events/streams.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { createAccess } from '../../service/access.ts';
import { createThesisFeed } from '../../service/thesis/feed.ts';
import { createInProcessHeartbeat } from '../../service/thesis/in-process-heartbeat.ts';
import { utcDayOf } from '../../service/thesis/limits.ts';
import { globalScope } from '../../service/thesis/quota.ts';

const [dataDir, owner, contract, nowIso] = process.argv.slice(2);
if (!dataDir || !owner || !contract || !nowIso) throw new Error('usage: race-child.ts dataDir owner contract nowIso');

const waiting: ((line: string) => void)[] = [];
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => waiting.shift()?.(line.trim()));
const expectLine = (word: string) =>
  new Promise<void>((resolve, reject) =>
    waiting.push((line) => (line === word ? resolve() : reject(new Error(`expected ${word}, got ${line}`)))),
  );

const config = parseConfig({});
if (!config.ok) throw new Error(config.reason);
const now = () => new Date(nowIso);
const log = createSqliteEventLog(join(dataDir, 'events.sqlite'));
const store = createSqliteReadStore(join(dataDir, 'readmodels.sqlite'));

const globalQuota = streams.thesisQuota(globalScope, utcDayOf(now()));
let held = false;
let lostRaces = 0;
const append = log.append.bind(log);
log.append = async (stream, events, expected) => {
  if (stream === globalQuota && !held) {
    held = true;
    process.stdout.write('at-append\n');
    await expectLine('append');
  }
  const appended = await append(stream, events, expected);
  if (!appended.ok) lostRaces += 1;
  return appended;
};

// This process stands in for an API replica that sees a live reader elsewhere.
const heartbeat = createInProcessHeartbeat({ now });
await heartbeat.beat();
const quiet = { info() {}, warn() {}, error() {} };
const feed = createThesisFeed({
  log,
  store,
  access: createAccess(store, now),
  config: config.config,
  heartbeat,
  now,
  logger: quiet,
});

process.stdout.write('ready\n');
await expectLine('go');
const result = await feed.request({ keyId: `key-${owner}`, owner }, { contract });
const outcome = result.ok
  ? { ok: true, httpStatus: result.value.httpStatus }
  : { ok: false, status: result.error.status, retryAfter: result.error.retryAfter };
process.stdout.write(`${JSON.stringify({ lostRaces, ...outcome })}\n`);
lines.close();
await store.close();
await log.close();
