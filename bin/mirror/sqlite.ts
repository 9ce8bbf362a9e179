import { DatabaseSync } from 'node:sqlite';
import { CURSOR_TABLE, MIRROR_TABLE, numbered, type MirrorStore } from './store.ts';

/** The mirror in a SQLite file (created with its tables on first use; its folder must exist). */
export function openSqliteMirror(file: string): MirrorStore {
  const db = new DatabaseSync(file);
  // Waits for a lock another process holds; WAL keeps readers of the mirror off the writer's way.
  db.exec('PRAGMA busy_timeout = 10000');
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec(`CREATE TABLE IF NOT EXISTS ${MIRROR_TABLE} (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    written_at TEXT NOT NULL,
    seq INTEGER NOT NULL
  )`);
  db.exec(`CREATE INDEX IF NOT EXISTS ${MIRROR_TABLE}_seq ON ${MIRROR_TABLE} (seq)`);
  db.exec(`CREATE TABLE IF NOT EXISTS ${CURSOR_TABLE} (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    cursor TEXT,
    seq INTEGER NOT NULL,
    source TEXT,
    updated_at TEXT
  )`);
  db.exec(`INSERT OR IGNORE INTO ${CURSOR_TABLE} (one, cursor, seq) VALUES (1, NULL, 0)`);

  const readState = db.prepare(`SELECT cursor, seq FROM ${CURSOR_TABLE} WHERE one = 1`);
  const upsert = db.prepare(
    `INSERT INTO ${MIRROR_TABLE} (id, project, written_at, seq) VALUES (?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET project = excluded.project, written_at = excluded.written_at, seq = excluded.seq`,
  );
  const moveCursor = db.prepare(
    `UPDATE ${CURSOR_TABLE} SET cursor = ?, seq = ?, source = ?, updated_at = ? WHERE one = 1`,
  );
  const current = () => {
    const row = readState.get() as { cursor: string | null; seq: number };
    return { cursor: row.cursor, seq: Number(row.seq) };
  };

  return {
    name: `sqlite:${file}`,
    state: async () => current(),
    async commit(from, rows, cursor, source) {
      db.exec('BEGIN IMMEDIATE');
      try {
        const stored = current();
        if (stored.cursor !== from.cursor || stored.seq !== from.seq) {
          db.exec('ROLLBACK');
          return {
            ok: false,
            reason: 'the stored cursor moved under this mirror: is another mirror writing to the same store?',
          };
        }
        const writtenAt = new Date().toISOString();
        const page = numbered(rows, from.seq);
        for (const row of page.rows) upsert.run(row.id, row.json, writtenAt, row.seq);
        moveCursor.run(cursor, page.seq, source, writtenAt);
        db.exec('COMMIT');
        return { ok: true, state: { cursor, seq: page.seq } };
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
    },
    async close() {
      db.close();
    },
  };
}
