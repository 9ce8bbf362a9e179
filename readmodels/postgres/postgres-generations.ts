/**
 * The generation space on PostgreSQL: generation N's tables are schema `pulseboard_g<N>`
 * (postgres-schema.ts), made by its first use and dropped whole by `remove(N)`. Schema `pulseboard`
 * holds the rest:
 * - `pointer`: the live generation and a stamp bumped at every switch; a switch is one conditional UPDATE.
 * - `replay_lock`: a lease {holder, host, pid, expires_at} the replay renews every third of its length,
 *   and a fencing token bumped at every acquire (kept after release). A lease that ran out, or whose
 *   process on this host is gone, is taken over with a compare-and-set on the token it had. The token is
 *   the lock's fence: a build commit, the pointer switch and `remove` that name it check it in their own
 *   transaction under FOR SHARE, so a takeover waits for them and whatever follows a takeover is refused.
 * Which generations a process uses is a shared advisory lock per generation held by its presence session
 * (postgres-presence.ts): a dropped schema fails the reads of whoever still reads it, so a replay removes
 * the old generation only once no session holds its lock, and a process that dies lets go with its
 * connection. A switch NOTIFYs the pointer channel, which that session LISTENs to (`pointerFeed`).
 * Commits are announced by NOTIFY; `commitFeed` LISTENs (postgres-commit-feed.ts).
 */
import { processAlive } from '../generations/process-alive.ts';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { fencedRefusal, type GenerationSpace, type PointerRead, type ReplayLock } from '../generations/port.ts';
import { fenceHolds, type Fence } from './postgres-commit.ts';
import { postgresCommitFeed } from './postgres-commit-feed.ts';
import { POINTER_CHANNEL, postgresPresence } from './postgres-presence.ts';
import { createPool, quoteIdent, withClient } from './postgres-pool.ts';
import { postgresReadStoreOn } from './postgres-read-store.ts';
import {
  DDL_LOCK,
  GENERATION_SCHEMA_PATTERN,
  generationOfSchema,
  generationSchema,
  runDdl,
  SPACE_SCHEMA,
  SPACE_TABLES,
} from './postgres-schema.ts';

export type PostgresGenerationOptions = {
  /** Length of the replay lock's lease (renewed while the replay runs). */
  leaseMs?: number;
  clock?: () => number;
};

const POINTER = `${SPACE_SCHEMA}.pointer`;
const LOCK = `${SPACE_SCHEMA}.replay_lock`;

type LockRow = {
  token: number;
  holder: string | null;
  host: string | null;
  pid: number | null;
  expires_at: number | null;
};

export function createPostgresGenerationSpace(url: string, options: PostgresGenerationOptions = {}): GenerationSpace {
  const leaseMs = options.leaseMs ?? 30_000;
  const clock = options.clock ?? Date.now;
  const pool = createPool(url);
  const presence = postgresPresence(url);
  let closed = false;
  let ready: Promise<void> | undefined;
  const renewals = new Set<ReturnType<typeof setInterval>>();

  function ensure(): Promise<void> {
    ready ??= withClient(
      pool,
      async (client) => {
        const made = await client.query<{ made: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS made`, [LOCK]);
        if (!made.rows[0]?.made) await runDdl(client, SPACE_TABLES);
      },
      (client) => client.query('ROLLBACK'),
    );
    ready.catch(() => {
      ready = undefined;
    });
    return ready;
  }

  async function rows<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    await ensure();
    return withClient(pool, async (client) => (await client.query<R>(text, values)).rows);
  }

  /** `work` in a transaction that first checks, when a replay names its fence, that its lock is still the newest. */
  async function fenced<T>(fence: Fence | undefined, work: (client: pg.ClientBase) => Promise<T>) {
    await ensure();
    return withClient(
      pool,
      async (client): Promise<{ ok: true; value: T } | { ok: false }> => {
        await client.query('BEGIN');
        if (fence !== undefined && !(await fenceHolds(client, fence))) {
          await client.query('ROLLBACK');
          return { ok: false };
        }
        const value = await work(client);
        await client.query('COMMIT');
        return { ok: true, value };
      },
      (client) => client.query('ROLLBACK'),
    );
  }

  async function generations(): Promise<number[]> {
    const found = await rows<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname ~ $1`, [
      GENERATION_SCHEMA_PATTERN,
    ]);
    return found
      .map((row) => generationOfSchema(row.nspname))
      .filter((g): g is number => g !== null)
      .sort((a, b) => a - b);
  }

  async function readPointer(): Promise<PointerRead> {
    const [row] = await rows<{ generation: number }>(`SELECT generation FROM ${POINTER} WHERE id = 1`);
    return { ok: true, generation: row?.generation ?? 0 };
  }

  async function acquireReplayLock(): Promise<ReplayLock> {
    const holder = randomUUID();
    const host = hostname();
    for (let attempt = 0; attempt < 3; attempt++) {
      const [current] = await rows<LockRow>(`SELECT token, holder, host, pid, expires_at FROM ${LOCK} WHERE id = 1`);
      if (!current) throw new Error(`${LOCK} has no row`);
      if (current.holder !== null) {
        const expired = current.expires_at === null || current.expires_at <= clock();
        const deadHere =
          current.host === host && current.pid !== null && current.pid !== process.pid && !processAlive(current.pid);
        if (!expired && !deadHere) {
          return {
            ok: false,
            reason: `another replay is running (pid ${String(current.pid)} on ${String(current.host)}); if it was killed, its lock lapses at ${new Date(current.expires_at!).toISOString()}`,
          };
        }
      }
      // A compare-and-set on the token seen: of two takers, one wins; the token moves on either way.
      const [taken] = await rows<{ token: number }>(
        `UPDATE ${LOCK} SET token = token + 1, holder = $2, host = $3, pid = $4, expires_at = $5
         WHERE id = 1 AND token = $1 RETURNING token`,
        [current.token, holder, host, process.pid, clock() + leaseMs],
      );
      if (!taken) continue;
      const mine = { holder, token: taken.token };

      let lost = false;
      const renew = setInterval(
        () => {
          withClient(pool, (client) =>
            client.query(`UPDATE ${LOCK} SET expires_at = $3 WHERE id = 1 AND holder = $1 AND token = $2`, [
              mine.holder,
              mine.token,
              clock() + leaseMs,
            ]),
          ).then(
            (result) => {
              if (result.rowCount === 0) lost = true;
            },
            () => undefined, // a missed renewal is caught by held() before the switch
          );
        },
        Math.max(1, Math.floor(leaseMs / 3)),
      );
      renewals.add(renew);
      renew.unref();
      return {
        ok: true,
        fence: mine.token,
        async held() {
          if (lost) return false;
          const [row] = await rows<LockRow>(`SELECT token, holder, expires_at FROM ${LOCK} WHERE id = 1`);
          return row?.holder === mine.holder && row.token === mine.token && (row.expires_at ?? 0) > clock();
        },
        async release() {
          clearInterval(renew);
          renewals.delete(renew);
          await rows(
            `UPDATE ${LOCK} SET holder = NULL, host = NULL, pid = NULL, expires_at = NULL
             WHERE id = 1 AND holder = $1 AND token = $2`,
            [mine.holder, mine.token],
          );
        },
      };
    }
    return { ok: false, reason: `could not take the replay lock in ${LOCK}; try again` };
  }

  return {
    label: (generation) => `schema ${generationSchema(generation)}`,
    pointerLabel: `the row of ${POINTER}`,
    readPointer,

    async pointerStamp() {
      const [row] = await rows<{ generation: number; stamp: number }>(
        `SELECT generation, stamp FROM ${POINTER} WHERE id = 1`,
      );
      return row ? `${row.generation}:${row.stamp}` : 'absent';
    },

    async switchPointer(expected, next, fence) {
      const switched = await fenced(
        fence,
        async (client) =>
          (
            await client.query(
              // The NOTIFY is delivered at commit, and only if the switch commits: serving processes re-read then.
              `WITH switched AS (
                 UPDATE ${POINTER} SET generation = $2, stamp = stamp + 1 WHERE id = 1 AND generation = $1 RETURNING 1
               )
               SELECT pg_notify($3, $2::text) FROM switched`,
              [expected, next, POINTER_CHANNEL],
            )
          ).rowCount === 1,
      );
      if (!switched.ok) return fencedRefusal;
      if (switched.value) return { ok: true };
      const current = await readPointer();
      return {
        ok: false,
        reason: `the live generation is ${current.ok ? current.generation : 'unreadable'}, not ${expected}`,
      };
    },

    list: generations,
    exists: async (generation) =>
      (await rows(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [generationSchema(generation)])).length > 0,

    open(generation, purpose, fence) {
      const build = purpose === 'build';
      return postgresReadStoreOn(pool, generation, {
        ownsPool: false,
        build,
        ...(build && fence !== undefined ? { fence } : {}),
      });
    },

    commitFeed: () => postgresCommitFeed(url),
    pointerFeed: () => presence.pointerFeed,

    async remove(generation, fence) {
      const removed = await fenced(fence, async (client) => {
        // The DDL lock: a store making this generation's tables at this moment finishes first.
        await client.query(`SELECT pg_advisory_xact_lock(${DDL_LOCK})`);
        await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(generationSchema(generation))} CASCADE`);
      });
      return removed.ok ? { ok: true } : fencedRefusal;
    },

    acquireReplayLock,
    removalDisturbsUsers: true,

    // Held while the process lives: nothing to renew (no announceEveryMs).
    announce: (instance, generations) => presence.announce(instance, generations),
    withdraw: (instance) => presence.withdraw(instance),
    inUse: (generation) => withClient(pool, (client) => presence.inUse(generation, client)),

    async close() {
      if (closed) return;
      closed = true;
      for (const renew of renewals) clearInterval(renew);
      renewals.clear();
      await presence.close();
      await pool.end();
    },
  };
}
