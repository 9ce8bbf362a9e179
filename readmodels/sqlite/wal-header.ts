import { closeSync, openSync, readSync } from 'node:fs';

/**
 * Whether any connection (in any process) has committed since a mark, from the first 48 bytes of the
 * `-shm` file (the WAL-index header every commit and WAL reset rewrites; sqlite.org/walformat.html).
 * Why by hand: one pread, where `PRAGMA data_version` takes and drops a WAL read lock on every request
 * (docs/scale.md, "Where one project's CPU goes", has the figure). Changed bytes (or a torn read) only
 * mean "look again"; without a `-shm` file (in memory, journal off) every call answers "changed".
 */
export type WalHeaderWatch = {
  mark(): void;
  unchanged(): boolean;
  close(): void;
};

const HEADER_BYTES = 48;

export function watchWalHeader(databasePath: string): WalHeaderWatch {
  let fd: number | null | undefined;
  const marked = Buffer.alloc(HEADER_BYTES);
  const scratch = Buffer.alloc(HEADER_BYTES);
  let hasMark = false;

  // Opened on first use: the file exists once a connection has read the database in WAL mode.
  const file = (): number | null => {
    if (fd !== undefined) return fd;
    if (databasePath === ':memory:' || databasePath === '') return (fd = null);
    try {
      fd = openSync(`${databasePath}-shm`, 'r');
    } catch {
      return null;
    }
    return fd;
  };

  const readInto = (target: Buffer): boolean => {
    const handle = file();
    if (handle === null) return false;
    try {
      return readSync(handle, target, 0, HEADER_BYTES, 0) === HEADER_BYTES;
    } catch {
      return false;
    }
  };

  return {
    mark() {
      hasMark = readInto(marked);
    },
    unchanged() {
      return hasMark && readInto(scratch) && scratch.equals(marked);
    },
    close() {
      if (typeof fd === 'number') closeSync(fd);
      fd = null;
      hasMark = false;
    },
  };
}
