/**
 * The generation space on MongoDB: generation N of read model `projects` is the
 * collection `projects_v<N>` (generation 0, from before any replay, is `projects`), with its
 * checkpoints in `_pulseboard_checkpoints_v<N>`. One client serves every generation.
 *
 * `_pulseboard_generations` holds the rest, one document each:
 * - `live`: {generation}, the pointer; absent means 0. A switch is one conditional update.
 * - `replay-lock`: {holder, host, pid, acquiredAt, expiresAt, fence}, a lease the replay renews every third of its
 *   length. A lock whose lease ran out, or whose process on this host is gone, is taken over. `fence`
 *   comes from `replay-fence` ({value}, incremented at every acquire): a build commit, a switch and a
 *   removal by the replay write the lock document conditioned on their fence, in their transaction, so
 *   after a takeover they are refused and a takeover racing them is a write conflict, never both.
 * - `user:<instance>`: {kind: 'user', generations, at}, what a serving process or projector uses,
 *   written when that changes, and renewed every `announceEveryMs` only while a replay runs (the
 *   pointer's change stream also carries the lock's lease) or while that stream is down: 100 idle
 *   processes write nothing. A dropped collection reads as empty instead of failing, so a replay
 *   removes the old generation only once no announcement names it that is younger than `staleMs`,
 *   counted once users have had `staleMs` since the replay began to hear of it and renew (before,
 *   every announcement counts). Times are each process's own clock: hosts are assumed to agree to
 *   well within `staleMs`.
 */
import { processAlive } from '../generations/process-alive.ts';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { MongoClient, MongoServerError, type ClientSession } from 'mongodb';
import { fencedRefusal, type GenerationSpace, type PointerRead, type ReplayLock } from '../generations/port.ts';
import { GENERATIONS_COLLECTION, generationOfCollection } from './mongodb-layout.ts';
import { mongoReadStoreOn } from './mongodb-read-store.ts';
import { mongoCommitFeed, mongoPointerFeed } from './mongodb-commit-feed.ts';

type MetaDoc = {
  _id: string;
  generation?: unknown;
  kind?: 'user';
  generations?: number[];
  at?: Date;
  holder?: string;
  host?: string;
  acquiredAt?: Date;
  pid?: number;
  expiresAt?: Date;
  fence?: number;
  value?: number;
};

export type MongoGenerationOptions = {
  /** Length of the replay lock's lease (renewed while the replay runs). */
  leaseMs?: number;
  /** An announcement older than this no longer keeps a generation in use. */
  staleMs?: number;
  /** An unchanged announcement is written again this often while a replay runs (or the pointer stream is down). */
  announceEveryMs?: number;
  clock?: () => number;
};

const LIVE = 'live';
const LOCK = 'replay-lock';
const FENCE = 'replay-fence';
const DUPLICATE_KEY = 11000;
const NAMESPACE_NOT_FOUND = 26;

const isDuplicateKey = (error: unknown) => error instanceof MongoServerError && error.code === DUPLICATE_KEY;

export function createMongoGenerationSpace(url: string, options: MongoGenerationOptions = {}): GenerationSpace {
  const leaseMs = options.leaseMs ?? 30_000;
  const staleMs = options.staleMs ?? 10_000;
  const announceEveryMs = options.announceEveryMs ?? 1_000;
  const clock = options.clock ?? Date.now;
  const client = new MongoClient(url);
  const db = client.db();
  const meta = db.collection<MetaDoc>(GENERATIONS_COLLECTION);
  const announced = new Map<string, { generations: string; at: number }>();
  // What this process heard on its pointer streams: how many are live, and a running replay's lease end.
  let liveStreams = 0;
  let replayUntil = 0;
  const renewing = () => liveStreams === 0 || clock() < replayUntil;

  async function collectionsByGeneration(): Promise<Map<number, string[]>> {
    const byGeneration = new Map<number, string[]>();
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      const generation = generationOfCollection(name);
      if (generation === null) continue;
      byGeneration.set(generation, [...(byGeneration.get(generation) ?? []), name]);
    }
    return byGeneration;
  }

  async function readPointer(): Promise<PointerRead> {
    const live = await meta.findOne({ _id: LIVE });
    if (!live) return { ok: true, generation: 0 };
    const { generation } = live;
    if (typeof generation !== 'number' || !Number.isInteger(generation) || generation < 0) {
      return {
        ok: false,
        reason: `the '${LIVE}' document in ${GENERATIONS_COLLECTION} does not hold a generation number; run 'pulseboard replay' to rebuild the read models`,
      };
    }
    return { ok: true, generation };
  }

  /** Whether `fence` is still the newest lock's; written, not only read, so a racing takeover conflicts. */
  async function stillFenced(fence: number, session?: ClientSession): Promise<boolean> {
    const touched = await meta.updateOne(
      { _id: LOCK, fence },
      { $set: { touchedAt: new Date(clock()) } },
      session ? { session } : {},
    );
    return touched.matchedCount === 1;
  }

  async function fencedTransaction(fence: number, work: (session: ClientSession) => Promise<boolean>) {
    const session = client.startSession();
    try {
      let done = false;
      await session.withTransaction(
        async () => {
          done = (await stillFenced(fence, session)) && (await work(session));
        },
        { writeConcern: { w: 'majority' } },
      );
      return done;
    } finally {
      await session.endSession();
    }
  }

  async function acquireReplayLock(): Promise<ReplayLock> {
    const token = randomUUID();
    const host = hostname();
    for (let attempt = 0; attempt < 3; attempt++) {
      // Taken before the lock, so a token is never reused, even by an attempt that finds the lock held.
      const counter = await meta.findOneAndUpdate(
        { _id: FENCE },
        { $inc: { value: 1 } },
        { upsert: true, returnDocument: 'after' },
      );
      const fence = counter?.value ?? 1;
      try {
        await meta.insertOne({
          _id: LOCK,
          holder: token,
          host,
          pid: process.pid,
          acquiredAt: new Date(clock()),
          expiresAt: new Date(clock() + leaseMs),
          fence,
        });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        const current = await meta.findOne({ _id: LOCK });
        if (!current) continue; // released meanwhile
        const expired = !(current.expiresAt instanceof Date) || current.expiresAt.getTime() <= clock();
        const deadHere =
          current.host === host &&
          typeof current.pid === 'number' &&
          current.pid !== process.pid &&
          !processAlive(current.pid);
        if (!expired && !deadHere) {
          return {
            ok: false,
            reason: `another replay is running (pid ${String(current.pid)} on ${String(current.host)}); if it was killed, its lock lapses at ${current.expiresAt!.toISOString()}`,
          };
        }
        await meta.deleteOne({ _id: LOCK, holder: current.holder });
        continue;
      }

      let lost = false;
      const renew = setInterval(
        () => {
          meta
            .updateOne({ _id: LOCK, holder: token }, { $set: { expiresAt: new Date(clock() + leaseMs) } })
            .then((result) => {
              if (result.matchedCount === 0) lost = true;
            })
            .catch(() => undefined); // a missed renewal is caught by held() before the switch
        },
        Math.max(1, Math.floor(leaseMs / 3)),
      );
      renew.unref();
      return {
        ok: true,
        fence,
        async held() {
          if (lost) return false;
          const current = await meta.findOne({ _id: LOCK });
          return (
            current?.holder === token && current.expiresAt instanceof Date && current.expiresAt.getTime() > clock()
          );
        },
        async release() {
          clearInterval(renew);
          await meta.deleteOne({ _id: LOCK, holder: token });
        },
      };
    }
    return { ok: false, reason: `could not take the replay lock in ${GENERATIONS_COLLECTION}; try again` };
  }

  return {
    label: (generation) =>
      generation === 0 ? 'the collections without a _v suffix (generation 0)' : `collections *_v${generation}`,
    pointerLabel: `the '${LIVE}' document in ${GENERATIONS_COLLECTION}`,
    readPointer,

    async pointerStamp() {
      const live = await meta.findOne({ _id: LIVE }, { projection: { generation: 1 } });
      return live ? JSON.stringify(live.generation) : 'absent';
    },

    async switchPointer(expected, next, fence) {
      if (fence !== undefined) {
        const switched = await fencedTransaction(fence, async (session) => {
          const result = await meta.updateOne(
            { _id: LIVE, generation: expected },
            { $set: { generation: next } },
            { upsert: expected === 0, session },
          );
          return result.matchedCount + result.upsertedCount === 1;
        }).catch((error: unknown) => {
          if (isDuplicateKey(error)) return false;
          throw error;
        });
        if (switched) return { ok: true };
        if (!(await stillFenced(fence))) return fencedRefusal;
        const current = await readPointer();
        return {
          ok: false,
          reason: `the live generation is ${current.ok ? current.generation : 'unreadable'}, not ${expected}`,
        };
      }
      try {
        // Without a pointer document the live generation is 0: the upsert creates it, and a
        // concurrent creator makes it a duplicate key instead of a second switch.
        const result = await meta.updateOne(
          { _id: LIVE, generation: expected },
          { $set: { generation: next } },
          { upsert: expected === 0, writeConcern: { w: 'majority' } },
        );
        if (result.matchedCount + result.upsertedCount === 1) return { ok: true };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const current = await readPointer();
      return {
        ok: false,
        reason: `the live generation is ${current.ok ? current.generation : 'unreadable'}, not ${expected}`,
      };
    },

    list: async () => [...(await collectionsByGeneration()).keys()].sort((a, b) => a - b),
    exists: async (generation) => (await collectionsByGeneration()).has(generation),
    open: (generation, _purpose, fence) =>
      mongoReadStoreOn(client, generation, {
        ownsClient: false,
        ...(fence === undefined ? {} : { fenced: (session: ClientSession) => stillFenced(fence, session) }),
      }),
    commitFeed: () => mongoCommitFeed(db),
    pointerFeed: () => {
      const feed = mongoPointerFeed(db, (expiresAt) => (replayUntil = expiresAt));
      return {
        open(handlers) {
          let live = false;
          const down = () => {
            if (live) liveStreams -= 1;
            live = false;
          };
          const opened = feed.open({
            ...handlers,
            live() {
              if (!live) liveStreams += 1;
              live = true;
              handlers.live();
            },
            failed(error) {
              down();
              handlers.failed(error);
            },
          });
          return {
            async close() {
              down();
              await opened.close();
            },
          };
        },
      };
    },

    async remove(generation, fence) {
      // Dropping a collection cannot join a transaction, so the fence is checked just before the drops.
      if (fence !== undefined && !(await stillFenced(fence))) return fencedRefusal;
      for (const name of (await collectionsByGeneration()).get(generation) ?? []) {
        try {
          await db.dropCollection(name);
        } catch (error) {
          if (!(error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND)) throw error;
        }
      }
      return { ok: true };
    },

    acquireReplayLock,
    removalDisturbsUsers: true,
    // MongoDB has no session lock that ends with the process: an announcement is a document, renewed
    // this often while a replay runs (checked locally every tick: no I/O otherwise).
    announceEveryMs,

    async announce(instance, generations) {
      const now = clock();
      const key = generations.join(',');
      const last = announced.get(instance);
      if (last && last.generations === key && (!renewing() || now - last.at < announceEveryMs)) return;
      await meta.updateOne(
        { _id: `user:${instance}` },
        { $set: { kind: 'user', generations: [...generations], at: new Date(now) } },
        { upsert: true },
      );
      announced.set(instance, { generations: key, at: now });
    },

    async withdraw(instance) {
      announced.delete(instance);
      await meta.deleteOne({ _id: `user:${instance}` });
    },

    async inUse(generation) {
      const now = clock();
      const lock = await meta.findOne({ _id: LOCK });
      const since =
        lock?.acquiredAt instanceof Date && lock.expiresAt instanceof Date && lock.expiresAt.getTime() > now
          ? lock.acquiredAt.getTime()
          : null;
      // Users renew only while a replay runs: until they have had staleMs to hear of it, every announcement counts.
      const fresh = since !== null && now - since >= staleMs ? { at: { $gt: new Date(now - staleMs) } } : {};
      const users = await meta.countDocuments({ kind: 'user', generations: generation, ...fresh }, { limit: 1 });
      return users > 0;
    },

    async close() {
      await client.close();
    },
  };
}
