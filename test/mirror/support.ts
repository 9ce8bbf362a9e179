import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { createClient } from '../../client/index.ts';
import { CLI } from '../support/cli.ts';
import type { ScratchSchema } from '../support/postgres.ts';

export type MirrorChild = {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
  answered: Promise<void>;
};

/** `pulseboard mirror …` in a child process; stderr is collected. */
export function startMirror(args: string[]): MirrorChild {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'mirror', ...args], {
    env: { PATH: process.env['PATH'] ?? '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let onAnswer = () => {};
  const answered = new Promise<void>((resolve) => (onAnswer = resolve));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    // Its first line comes once the service answered its first page.
    if (stderr.includes(' into ')) onAnswer();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  void exited.then(onAnswer);
  return { child, stderr: () => stderr, exited, answered };
}

export type MirrorRowState = { json: string; seq: number };
export type MirrorSnapshot = { rows: Map<string, MirrorRowState>; cursorSeq: number; cursor: string | null };

export function sqliteSnapshot(file: string): MirrorSnapshot {
  if (!existsSync(file)) return { rows: new Map(), cursorSeq: 0, cursor: null };
  const db = new DatabaseSync(file);
  try {
    const rows = new Map<string, MirrorRowState>();
    for (const row of db.prepare('SELECT id, project, seq FROM pulseboard_mirror').all() as {
      id: string;
      project: string;
      seq: number;
    }[]) {
      rows.set(row.id, { json: row.project, seq: Number(row.seq) });
    }
    const cursor = db.prepare('SELECT cursor, seq FROM pulseboard_mirror_cursor').get() as {
      cursor: string | null;
      seq: number;
    };
    return { rows, cursorSeq: Number(cursor.seq), cursor: cursor.cursor };
  } finally {
    db.close();
  }
}

export async function postgresSnapshot(schema: ScratchSchema): Promise<MirrorSnapshot> {
  const rows = new Map<string, MirrorRowState>();
  // One snapshot for both tables (REPEATABLE READ), as the atomicity check needs.
  await schema.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  try {
    for (const row of await schema.query<{ id: string; project: string; seq: string }>(
      'SELECT id, project_json AS project, seq FROM pulseboard_mirror',
    )) {
      rows.set(row.id, { json: row.project, seq: Number(row.seq) });
    }
    const [cursor] = await schema.query<{ cursor: string | null; seq: string }>(
      'SELECT cursor, seq FROM pulseboard_mirror_cursor',
    );
    return { rows, cursorSeq: Number(cursor!.seq), cursor: cursor!.cursor };
  } finally {
    await schema.query('COMMIT');
  }
}

/** Every project of the service, by a fresh delta walk from the beginning: id → its JSON as served. */
export async function freshWalk(baseUrl: string, key: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const step of createClient({ baseUrl, key }).projects.changes({
    since: '1970-01-01T00:00:00Z',
    limit: 100,
  })) {
    if (!step.ok) throw new Error(`fresh walk failed: ${step.error.code} ${step.error.message}`);
    for (const project of step.page.projects) out.set(project.id, JSON.stringify(project));
  }
  return out;
}

/** The first way the mirror differs from the truth, or null when it holds exactly the same rows. */
export function firstDifference(mirror: MirrorSnapshot, truth: Map<string, string>): string | null {
  if (mirror.rows.size !== truth.size) return `${mirror.rows.size} rows in the mirror, ${truth.size} on the service`;
  for (const [id, json] of truth) {
    const row = mirror.rows.get(id);
    if (!row) return `${id} is missing`;
    if (row.json !== json) return `${id} differs: ${row.json.slice(0, 200)} … != ${json.slice(0, 200)} …`;
  }
  return null;
}

/**
 * The invariants a crash must not break: the cursor's change number is the highest row's (rows and
 * cursor were committed together), and no row's seq went back or vanished since `before`.
 */
export function checkAgainst(before: MirrorSnapshot | null, now: MirrorSnapshot): string | null {
  let max = 0;
  for (const row of now.rows.values()) max = Math.max(max, row.seq);
  if (now.cursorSeq !== max) return `cursor seq ${now.cursorSeq} but highest row seq ${max}`;
  if (!before) return null;
  for (const [id, row] of before.rows) {
    const later = now.rows.get(id);
    if (!later) return `${id} vanished`;
    if (later.seq < row.seq) return `${id}: seq went back from ${row.seq} to ${later.seq}`;
  }
  return null;
}
