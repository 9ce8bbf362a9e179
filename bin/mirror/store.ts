/**
 * Where `pulseboard mirror` keeps the board: a mirror table of projects and a one-row cursor table,
 * written together in one transaction per page, so a crash at any moment neither loses nor repeats
 * a page. Each adapter creates its schema on first use.
 */

/** One project of a page: its id and its JSON exactly as served. */
export type MirrorRow = { id: string; json: string };

/** What the store holds about the walk: the cursor after the last page committed, and the last change number given. */
export type MirrorState = { cursor: string | null; seq: number };

export type CommitResult = { ok: true; state: MirrorState } | { ok: false; reason: string };

export type MirrorStore = {
  /** How the store is named in messages (never with a password). */
  name: string;
  state(): Promise<MirrorState>;
  /**
   * Upserts the rows by id (each gets the next change number, `seq`) and moves the cursor from
   * `from` to `cursor`, all in one transaction; refused when the stored cursor is no longer `from`
   * (another mirror writes to the same store).
   */
  commit(from: MirrorState, rows: MirrorRow[], cursor: string, source: string): Promise<CommitResult>;
  close(): Promise<void>;
};

export const MIRROR_TABLE = 'pulseboard_mirror';
export const CURSOR_TABLE = 'pulseboard_mirror_cursor';

export type StoreTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };

/** `sqlite:FILE` or a `postgres://`/`postgresql://` URL; anything else is a usage error (the reason). */
export function parseTarget(to: string): StoreTarget | { reason: string } {
  if (to.startsWith('sqlite:')) {
    const file = to.slice('sqlite:'.length);
    return file === ''
      ? { reason: '--to sqlite: needs a file name, e.g. sqlite:board.sqlite' }
      : { kind: 'sqlite', file };
  }
  if (/^postgres(ql)?:\/\//.test(to)) return { kind: 'postgres', url: to };
  return { reason: '--to must be sqlite:FILE or a postgres://… URL' };
}

/** The URL without its password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.href;
  } catch {
    return 'postgres://…';
  }
}

/** The last change number of a page's rows counted from `seq`, in page order (a repeated id keeps its last state). */
export function numbered(rows: MirrorRow[], seq: number): { rows: (MirrorRow & { seq: number })[]; seq: number } {
  const byId = new Map<string, MirrorRow & { seq: number }>();
  let next = seq;
  for (const row of rows) {
    byId.delete(row.id);
    byId.set(row.id, { ...row, seq: ++next });
  }
  return { rows: [...byId.values()], seq: next };
}
