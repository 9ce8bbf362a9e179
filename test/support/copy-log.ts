import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';

/** Copies the PostgreSQL log into an embedded one as stored: positions, recordedAt and the archive id. */
export async function copyLog(postgresUrl: string, dataDir: string): Promise<void> {
  const { createPostgresEventLog } = await import('../../eventstore/postgres/postgres-event-log.ts');
  const source = createPostgresEventLog(postgresUrl);
  await createSqliteEventLog(join(dataDir, 'events.sqlite')).close();
  const db = new DatabaseSync(join(dataDir, 'events.sqlite'));
  try {
    db.prepare(`UPDATE log_meta SET value = ? WHERE key = 'archive_id'`).run(await source.archiveId());
    const insert = db.prepare(
      'INSERT INTO events (position, id, stream, revision, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    db.exec('BEGIN');
    for (let after = 0; ;) {
      const page = await source.readAll({ afterPosition: after, limit: 5_000 });
      if (page.length === 0) break;
      for (const e of page)
        insert.run(
          e.position,
          e.id,
          e.stream,
          e.revision,
          e.type,
          JSON.stringify(e.data),
          JSON.stringify(e.metadata),
          e.recordedAt,
        );
      after = page[page.length - 1]!.position;
    }
    db.exec('COMMIT');
  } finally {
    db.close();
    await source.close();
  }
}
