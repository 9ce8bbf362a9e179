import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { ReadStore } from '../port.ts';
import { createSqliteReadStore } from './sqlite-read-store.ts';

/**
 * Generations of the embedded read models (DESIGN §7, `pulseboard replay`).
 *
 * Generation 0 is `readmodels.sqlite`, the file every data directory starts with (so data
 * directories from before generations need no migration); generation N ≥ 1 is
 * `readmodels-N.sqlite`. The pointer file `readmodels.current` names the live generation; without
 * it, generation 0 is live. A replay builds generation live+1 beside the live one, replaces the
 * pointer atomically (write a temporary file, fsync, rename) and only then removes the old files.
 */

export const POINTER_FILE = 'readmodels.current';
export const REPLAY_LOCK_FILE = 'readmodels.replay.lock';

const FILE_PATTERN = /^readmodels(?:-([1-9]\d*))?\.sqlite(?:-wal|-shm|-journal)?$/;
const SIDE_FILES = ['', '-wal', '-shm', '-journal'];

export function generationFile(generation: number): string {
  return generation === 0 ? 'readmodels.sqlite' : `readmodels-${generation}.sqlite`;
}

export function generationPath(dataDir: string, generation: number): string {
  return join(dataDir, generationFile(generation));
}

export type PointerRead = { ok: true; generation: number } | { ok: false; reason: string };

/** The live generation: what the pointer names, 0 when there is no pointer yet. */
export function readPointer(dataDir: string): PointerRead {
  const path = join(dataDir, POINTER_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, generation: 0 };
    return { ok: false, reason: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}` };
  }
  const match = /^(0|[1-9]\d{0,8})\n?$/.exec(text);
  if (!match) return { ok: false, reason: `${path} does not hold a generation number; run 'pulseboard replay' to rebuild the read models` };
  return { ok: true, generation: Number(match[1]) };
}

/**
 * A cheap fingerprint of the pointer file (inode, mtime, size): the rename that replaces it always
 * changes the inode, so a running service notices a switch with one stat call.
 */
export function pointerStamp(dataDir: string): string {
  const stat = statSync(join(dataDir, POINTER_FILE), { throwIfNoEntry: false });
  return stat ? `${stat.ino}:${stat.mtimeMs}:${stat.size}` : 'absent';
}

/** Names `generation` live: write-temp-then-rename, so readers see the old or the new pointer, never a torn one. */
export function writePointer(dataDir: string, generation: number): void {
  const target = join(dataDir, POINTER_FILE);
  const temporary = `${target}.tmp-${process.pid}`;
  const fd = openSync(temporary, 'w');
  try {
    writeSync(fd, `${generation}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, target);
  // Persist the rename itself; not every platform can fsync a directory, and the rename is already atomic.
  try {
    const dir = openSync(dataDir, 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  } catch {
    /* best effort */
  }
}

/** Generation numbers that have any file (database, WAL, shared memory) in the data directory. */
export function listGenerations(dataDir: string): number[] {
  if (!existsSync(dataDir)) return [];
  const found = new Set<number>();
  for (const name of readdirSync(dataDir)) {
    const match = FILE_PATTERN.exec(name);
    if (match) found.add(match[1] === undefined ? 0 : Number(match[1]));
  }
  return [...found].sort((a, b) => a - b);
}

/**
 * Removes a generation's files. A process that still has them open keeps reading its open handle
 * (POSIX unlink); nobody opens them by name again, because generation numbers only move forward.
 */
export function removeGeneration(dataDir: string, generation: number): void {
  const base = generationPath(dataDir, generation);
  for (const suffix of SIDE_FILES) rmSync(`${base}${suffix}`, { force: true });
}

/** Checkpoints stored in a generation's file, without the adapter (and without creating the file). */
export function readCheckpoints(dataDir: string, generation: number): Map<string, number> {
  const path = generationPath(dataDir, generation);
  const checkpoints = new Map<string, number>();
  if (!existsSync(path)) return checkpoints;
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA busy_timeout = 10000');
    const table = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'`).get();
    if (!table) return checkpoints;
    for (const row of db.prepare('SELECT collection, position FROM checkpoints').all() as { collection: string; position: number }[]) {
      checkpoints.set(row.collection, row.position);
    }
    return checkpoints;
  } finally {
    db.close();
  }
}

export type OpenedGeneration = { ok: true; generation: number; store: ReadStore } | { ok: false; reason: string };

/**
 * Opens the live generation. The pointer is read again after opening: if a replay switched (and
 * may have removed the file) in between, the handle is closed and the new live one opened instead.
 */
export function openLiveGeneration(dataDir: string): OpenedGeneration {
  mkdirSync(dataDir, { recursive: true });
  for (let attempt = 0; attempt < 10; attempt++) {
    const pointer = readPointer(dataDir);
    if (!pointer.ok) return pointer;
    const path = generationPath(dataDir, pointer.generation);
    if (pointer.generation > 0 && !existsSync(path)) {
      const again = readPointer(dataDir);
      if (again.ok && again.generation !== pointer.generation) continue;
      return {
        ok: false,
        reason: `${join(dataDir, POINTER_FILE)} names generation ${pointer.generation}, but ${path} is missing; run 'pulseboard replay' to rebuild the read models`,
      };
    }
    const store = createSqliteReadStore(path);
    const after = readPointer(dataDir);
    if (after.ok && after.generation === pointer.generation) return { ok: true, generation: pointer.generation, store };
    void store.close();
  }
  return { ok: false, reason: `the read-model generation in ${dataDir} keeps changing; try again` };
}

export type ReplayLock = { ok: true; release(): void } | { ok: false; reason: string };

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One replay at a time per data directory: an exclusive lock file holding the pid. A lock whose
 * process is gone (a killed replay) is taken over.
 */
export function acquireReplayLock(dataDir: string): ReplayLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, REPLAY_LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      return { ok: true, release: () => rmSync(path, { force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        return { ok: false, reason: `cannot create ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}` };
      }
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(path, 'utf8').trim());
    } catch {
      continue; // removed meanwhile: try again
    }
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
      return { ok: false, reason: `another replay is running (pid ${holder}); if none is, remove ${path}` };
    }
    rmSync(path, { force: true });
  }
  return { ok: false, reason: `could not take ${path}; try again` };
}
