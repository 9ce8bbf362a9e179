/**
 * The history model is projected like every read model: a replay (in one batch or many, all read models)
 * and a live catch-up in small batches, each write committed as it came, leave the same rows byte for byte
 * (a version's shared text compared by its text, not its row id).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, it } from 'vitest';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { projectors } from '../../projectors/registry.ts';
import { createProjectionRunner } from '../../projectors/runner.ts';
import { versionDoc } from '../../readmodels/sqlite/sqlite-history.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { appendBoardHistory } from '../support/board-history.ts';

const dir = mkdtempSync(join(tmpdir(), 'pulseboard-history-rebuild-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TABLES = ['history_placements', 'history_counts', 'history_recorded_from'];

function dump(path: string): Record<string, string> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    // Versions with their shared texts put back (the texts' row ids follow the order the batches met them).
    const out: Record<string, string> = {
      history_versions: JSON.stringify(
        db
          .prepare(
            `SELECT collection, id, valid_from, valid_to, written_at, sort_key, facet, CAST(${versionDoc('v.', 't.')} AS TEXT) AS doc,
              shared_at FROM history_versions AS v LEFT JOIN history_shared_texts AS t ON t.rowid = v.shared_text
              ORDER BY collection, id, valid_from`,
          )
          .all(),
      ),
      history_shared_texts: JSON.stringify(db.prepare('SELECT text FROM history_shared_texts ORDER BY text').all()),
    };
    for (const table of TABLES) {
      const columns = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string; pk: number }[]).map(
        (c) => c.name,
      );
      const rows = db.prepare(`SELECT ${columns.join(', ')} FROM ${table} ORDER BY ${columns.join(', ')}`).all();
      out[table] = JSON.stringify(rows);
    }
    return out;
  } finally {
    db.close();
  }
}

it('replays and a live catch-up in batches of a few events write the same history rows', async () => {
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  await appendBoardHistory(log, { projects: 40, steps: 500, seed: 7 });
  const live = join(dir, 'live.sqlite');
  const liveStore = createSqliteReadStore(live);
  // Followed in pieces, as a serving process would while the log grows.
  for (const batchSize of [1, 3, 50])
    await createProjectionRunner(log, liveStore, projectors, { batchSize, maxPendingDocs: 5 }).catchUp();
  await appendBoardHistory(log, { projects: 40, steps: 200, seed: 8, prefix: 'later' });
  await createProjectionRunner(log, liveStore, projectors, { batchSize: 7 }).catchUp();
  await liveStore.close();

  const a = dump(live);
  assert.ok(JSON.parse(a.history_versions!).length > 300, 'the log made many public writes');
  assert.ok(JSON.parse(a.history_shared_texts!).length > 20, 'dossiers were kept apart');
  // A build takes versions ahead of their commit: in one batch, and across batches whose commits overlap the next fold.
  for (const [name, options] of Object.entries({ one: {}, pages: { batchSize: 7 }, held: { maxPendingDocs: 5 } })) {
    const rebuilt = join(dir, `replay-${name}.sqlite`);
    const replayStore = createSqliteReadStore(rebuilt, { bulkBuild: true });
    await createProjectionRunner(log, replayStore, projectors, options).catchUp();
    await replayStore.close();
    const b = dump(rebuilt);
    for (const table of Object.keys(a)) assert.equal(a[table], b[table], `${table} differs (replay: ${name})`);
  }
  await log.close();
});

it('a store that held documents before the history existed says from where it records (a replay builds it whole)', async () => {
  const path = join(dir, 'old.sqlite');
  const store = createSqliteReadStore(path);
  await store.commit('projects', [], 42);
  await store.close();
  const db = new DatabaseSync(path);
  db.exec('DROP TABLE history_versions; DROP TABLE history_recorded_from');
  db.close();
  const reopened = createSqliteReadStore(path);
  try {
    assert.equal(await reopened.history!.recordedFrom('projects'), 42);
    assert.equal(await reopened.history!.recordedFrom('calls'), 0);
  } finally {
    await reopened.close();
  }
});
