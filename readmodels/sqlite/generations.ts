import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fencedRefusal, type GenerationSpace, type PointerRead } from '../generations/port.ts';
import { createSqliteReadStore, type SqliteReadStoreOptions } from './sqlite-read-store.ts';

/**
 * Generations of the embedded read models (`pulseboard replay`).
 *
 * Generation 0 is `readmodels.sqlite`, the file every data directory starts with (so data
 * directories from before generations need no migration); generation N ≥ 1 is
 * `readmodels-N.sqlite`. The pointer file `readmodels.current` names the live generation; without
 * it, generation 0 is live. A replay builds generation live+1 beside the live one, replaces the
 * pointer atomically (write a temporary file, fsync, rename) and only then removes the old files.
 */

export const POINTER_FILE = 'readmodels.current';
export const REPLAY_LOCK_FILE = 'readmodels.replay.lock';
export const REPLAY_FENCE_FILE = 'readmodels.replay.fence';

const FILE_PATTERN = /^readmodels(?:-([1-9]\d*))?\.sqlite(?:-wal|-shm|-journal)?$/;
const SIDE_FILES = ['', '-wal', '-shm', '-journal'];

export function generationFile(generation: number): string {
  return generation === 0 ? 'readmodels.sqlite' : `readmodels-${generation}.sqlite`;
}

export function generationPath(dataDir: string, generation: number): string {
  return join(dataDir, generationFile(generation));
}

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
  if (!match)
    return {
      ok: false,
      reason: `${path} does not hold a generation number; run 'pulseboard replay' to rebuild the read models`,
    };
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

export type FileReplayLock =
  { ok: true; fence: number; held(): boolean; release(): void } | { ok: false; reason: string };

/** The newest replay lock's fencing token, kept beside the lock file (0 before the first replay). */
export function currentFence(dataDir: string): number {
  try {
    const value = Number(readFileSync(join(dataDir, REPLAY_FENCE_FILE), 'utf8').trim());
    return Number.isSafeInteger(value) ? value : 0;
  } catch {
    return 0;
  }
}

/**
 * One replay at a time per data directory: the replay keeps a write transaction open on the lock
 * file (a small SQLite database) for as long as it runs. The operating system drops that lock
 * when the process ends in any way, a SIGKILL included, so a killed replay never leaves a lock
 * behind and there is no stale holder to recognise or race for. The pid beside it only names the
 * holder in the refusal. The file itself stays: removing it could let a waiting opener lock a
 * file that nobody else sees any more.
 */
export function acquireReplayLock(dataDir: string): FileReplayLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, REPLAY_LOCK_FILE);
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { timeout: 0 });
  } catch (error) {
    return { ok: false, reason: `cannot open ${path}: ${error instanceof Error ? error.message : String(error)}` };
  }
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    db.close();
    const busy = error instanceof Error && /locked|busy/i.test(error.message);
    if (!busy)
      return { ok: false, reason: `cannot lock ${path}: ${error instanceof Error ? error.message : String(error)}` };
    let holder = '';
    try {
      holder = readFileSync(`${path}.pid`, 'utf8').trim();
    } catch {
      /* not written yet */
    }
    return {
      ok: false,
      reason: `another replay is running${/^\d+$/.test(holder) ? ` (pid ${holder})` : ''} on ${dataDir}`,
    };
  }
  writeFileSync(`${path}.pid`, `${process.pid}\n`);
  // Written only by the holder of the lock, so the read-increment-write needs no more than the lock.
  const fence = currentFence(dataDir) + 1;
  writeFileSync(join(dataDir, REPLAY_FENCE_FILE), `${fence}\n`);
  let held = true;
  return {
    ok: true,
    fence,
    held: () => held,
    release() {
      if (!held) return;
      held = false;
      rmSync(`${path}.pid`, { force: true });
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

/**
 * The embedded generation space: one SQLite file per generation in the data directory. Removing a
 * file never disturbs a process reading it (its open handle keeps the unlinked file), so nobody
 * needs to announce what they use. The pointer is only ever replaced by a replay holding the lock,
 * which makes the read-compare-write of `switchPointer` a compare-and-set.
 */
export function createSqliteGenerationSpace(
  dataDir: string,
  options: Pick<SqliteReadStoreOptions, 'mapBytes' | 'readCacheKiB'> = {},
): GenerationSpace {
  const serving: SqliteReadStoreOptions = {
    ...(options.mapBytes === undefined ? {} : { mapBytes: options.mapBytes }),
    ...(options.readCacheKiB === undefined ? {} : { readCacheKiB: options.readCacheKiB }),
  };
  return {
    label: generationFile,
    pointerLabel: join(dataDir, POINTER_FILE),
    readPointer: async () => readPointer(dataDir),
    pointerStamp: async () => pointerStamp(dataDir),
    async switchPointer(expected, next, fence) {
      if (fence !== undefined && fence !== currentFence(dataDir)) return fencedRefusal;
      const current = readPointer(dataDir);
      if (!current.ok) return current;
      if (current.generation !== expected) {
        return { ok: false, reason: `the live generation is ${current.generation}, not ${expected}` };
      }
      writePointer(dataDir, next);
      return { ok: true };
    },
    list: async () => listGenerations(dataDir),
    exists: async (generation) => existsSync(generationPath(dataDir, generation)),
    // A build's commits need no fence here: the lock is the OS's, which nobody takes over while its holder lives.
    open: (generation, purpose) =>
      createSqliteReadStore(generationPath(dataDir, generation), purpose === 'build' ? { bulkBuild: true } : serving),
    async remove(generation, fence) {
      if (fence !== undefined && fence !== currentFence(dataDir)) return fencedRefusal;
      removeGeneration(dataDir, generation);
      return { ok: true };
    },
    async acquireReplayLock() {
      const lock = acquireReplayLock(dataDir);
      if (!lock.ok) return lock;
      return { ok: true, fence: lock.fence, held: async () => lock.held(), release: async () => lock.release() };
    },
    removalDisturbsUsers: false,
    announce: async () => undefined,
    withdraw: async () => undefined,
    inUse: async () => false,
    close: async () => undefined,
  };
}
