/**
 * The generation-space port (`pulseboard replay`): where a read store keeps whole
 * generations of every read model side by side, and which one is live.
 *
 * A replay builds generation live+1 beside the live one, names it live with one compare-and-set on
 * the pointer, and then removes the old one. Everything that follows switches (serving processes,
 * projectors) and everything that replays is written once against this port
 * (readmodels/generations/, service/replay.ts); the adapters only say where generations live:
 * SQLite files in the data directory, or `<collection>_v<N>` collections in MongoDB.
 * Every adapter passes test/contract/generations.contract.ts.
 */
import type { CommitFeed } from '../commit-signal.ts';
import type { ReadStore } from '../port.ts';

export type Refusal = { ok: false; reason: string };

export type PointerRead = { ok: true; generation: number } | Refusal;

export type ReplayLock =
  | {
      ok: true;
      /**
       * The lock's fencing token, larger than any this space handed out before. The replay names it to
       * its build store, its switch and its removals, which are refused once a later replay holds the
       * lock: a replay that stalled past its lease can no longer write, switch or drop anything.
       */
      fence: number;
      /** Whether this replay still holds the lock (a lease can be lost to a stall); asked before switching. */
      held(): Promise<boolean>;
      release(): Promise<void>;
    }
  | Refusal;

export type GenerationSpace = {
  /** How an operator finds a generation in the store: `readmodels-2.sqlite`, `collections *_v2`. */
  label(generation: number): string;
  /** Where the pointer lives, for messages. */
  pointerLabel: string;
  /** The live generation: 0 until a replay has switched. */
  readPointer(): Promise<PointerRead>;
  /** Changes whenever the pointer is replaced; cheap enough to ask on every poll. */
  pointerStamp(): Promise<string>;
  /**
   * Names `next` live only if `expected` still is, so two replays can never both switch; with `fence`,
   * only while that replay lock is the newest.
   */
  switchPointer(expected: number, next: number, fence?: number): Promise<{ ok: true } | Refusal>;
  /** Generations that hold anything in the store, ascending. */
  list(): Promise<number[]>;
  exists(generation: number): Promise<boolean>;
  /**
   * A read store over one generation (created by its first write). Closing it leaves the space open.
   * `'build'`: the replay's new generation, which nobody reads before the switch and which is removed
   * if the replay fails or dies, so a store may write it the fastest way it has, as long as `close`
   * leaves it whole and durable (the embedded store writes it without a journal and syncs it on close).
   * With `fence`, a build's commits reject with ReplayFencedError once a later replay holds the lock.
   */
  open(generation: number, purpose?: 'build', fence?: number): ReadStore;
  /** Every commit of every process, where the store can tell (MongoDB: a change stream); absent: none. */
  commitFeed?(): CommitFeed;
  /**
   * Every switch of the pointer, where the store can tell (PostgreSQL: NOTIFY, MongoDB: a change stream;
   * each notice is `commit('pointer', generation)`): while it is live a serving process reads the pointer
   * on a notice and on a slow fallback, not every `pollMs`.
   */
  pointerFeed?(): CommitFeed;
  /** Removes everything a generation holds; with `fence`, only while that replay lock is the newest. */
  remove(generation: number, fence?: number): Promise<{ ok: true } | Refusal>;
  /** One replay at a time per space; the lock of a replay that is gone is taken over. */
  acquireReplayLock(): Promise<ReplayLock>;
  /**
   * Whether removing a generation can disturb a process that still reads it. SQLite: no, an
   * unlinked file stays readable through the handles open on it. MongoDB: yes, a dropped collection
   * reads as empty; so processes announce the generations they use, and a replay waits until the
   * old generation is unused before removing it.
   */
  removalDisturbsUsers: boolean;
  /**
   * Where an announcement lapses unless renewed (MongoDB: it is a document with a time), how often a user
   * must announce again; absent: an announcement holds until withdrawn or its process ends (PostgreSQL: a
   * session's advisory lock; SQLite: nothing to announce).
   */
  announceEveryMs?: number;
  /** Records that `instance` uses `generations` now (where removal can disturb users; otherwise nothing). */
  announce(instance: string, generations: readonly number[]): Promise<void>;
  /** `instance` uses no generation any more. */
  withdraw(instance: string): Promise<void>;
  /** Whether a process that announced recently still uses `generation`. */
  inUse(generation: number): Promise<boolean>;
  close(): Promise<void>;
};

/** A replay's write refused because a later replay holds the lock (its fence is no longer the newest). */
export class ReplayFencedError extends Error {
  override name = 'ReplayFencedError';
  constructor() {
    super('the replay lock was taken over by a later replay; this replay wrote nothing more');
  }
}

export const fencedRefusal: Refusal = {
  ok: false,
  reason: 'the replay lock was taken over by a later replay (its fence is newer)',
};
