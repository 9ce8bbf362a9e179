import { hash, randomBytes } from 'node:crypto';
import type { AppendResult, EventLog } from '../eventstore/port.ts';
import { commandEventId } from '../events/ids.ts';
import { streams } from '../events/streams.ts';
import {
  KEYS_COLLECTION,
  keysProjector,
  OWNERS_COLLECTION,
  ownersProjector,
  type KeyDoc,
  type OwnerDoc,
} from '../projectors/access.ts';
import type { Projector } from '../projectors/projector.ts';
import { foldEvents } from '../projectors/runner.ts';
import type { ReadStore, StoredDoc } from '../readmodels/port.ts';
import type { Caller } from './caller.ts';

/** `pbk_` + 32 random bytes in base64url. */
const KEY_PATTERN = /^pbk_[A-Za-z0-9_-]{43}$/;

// The one-shot digest: about half the time of createHash().update().digest() on a key-sized input.
export const hashKey = (key: string): string => hash('sha256', key, 'hex');

/** The key id is derived from the hash, so a request finds its key stream without any index. */
export const keyIdOf = (keyHash: string): string => keyHash.slice(0, 24);

export type OwnerAccess = { allowlisted: boolean; linked: boolean };

/**
 * What one connection remembers of the credential it last sent: the Authorization value and the
 * hash of its key. A client sends the same header on every request of a keep-alive connection, and
 * the same value is not hashed again; the key document is still looked up, and checked for
 * revocation and expiry, on every request. Owned by the transport, one per connection, dropped with it.
 */
export type CredentialMemo = { authorization?: string; keyHash?: string };

export type Access = {
  /**
   * Every failure (missing, malformed, unknown, revoked, expired) is the same `null`. `memo`: the
   * connection's, when the transport keeps one.
   */
  authenticate(authorization: string | undefined, memo?: CredentialMemo): Promise<Caller | null>;
  /** Re-checked on every call from the owners read model, which every owner change settles before it returns. */
  ownerAccess(owner: string): Promise<OwnerAccess>;
};

/**
 * Whether two texts are equal, in a time that depends on their length only: behind a proxy that
 * shares one connection among its clients, a memo holds another client's value, and an early exit
 * would say how much of it a guess matched.
 */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differ === 0;
}

/** The hash of the key an Authorization value carries, or null when it carries none of the key's form. */
function keyHashOf(authorization: string): string | null {
  const key = /^Bearer (\S+)$/.exec(authorization.trim())?.[1];
  return key !== undefined && KEY_PATTERN.test(key) ? hashKey(key) : null;
}

/** Known keys kept at most; past that the kept ones are dropped (unknown keys are never kept). */
const KEYS_KEPT_MAX = 10_000;

/**
 * Authentication and allowlist checks read the keys and owners read models (one indexed read each, or
 * only the checkpoint while the documents kept from an earlier request are current),
 * no event-log read per request, so reads go on while the log is unreachable. Every access command
 * (issue, revoke, allow, deny, link, unlink) brings those read models up to its own append before it
 * returns, so the next request on any instance sharing the read store sees the change, whatever
 * the projectors' lag.
 */
export function createAccess(store: ReadStore, now: () => Date = () => new Date()): Access {
  /**
   * Key documents of keys seen, by key hash, with the keys read model's checkpoint they were read at:
   * a key document changes only in a commit that advances that checkpoint (issue, revoke), so while it
   * is unchanged a request reads one checkpoint instead of the document. Expiry is checked every time.
   */
  const keys = new Map<string, { doc: KeyDoc; at: number }>();
  /** Owner access by owner, read at the owners checkpoint `ownersAt`. */
  const owners = new Map<string, OwnerAccess>();
  let ownersAt = -1;

  async function keyDoc(keyHash: string): Promise<KeyDoc | undefined> {
    // Fresh: the first checkpoint read of a request, so a change committed through any connection
    // before the request is seen; the reads after it in the turn are answered from the same read.
    const at = await store.checkpoint(KEYS_COLLECTION, { fresh: true });
    const known = keys.get(keyHash);
    return known && known.at === at ? known.doc : readKeyDoc(keyHash, at);
  }

  async function readKeyDoc(keyHash: string, at: number): Promise<KeyDoc | undefined> {
    const doc = (await store.get<KeyDoc>(KEYS_COLLECTION, keyIdOf(keyHash)))?.doc;
    if (doc && doc.keyHash === keyHash) {
      if (keys.size >= KEYS_KEPT_MAX) keys.clear();
      keys.set(keyHash, { doc, at });
    } else keys.delete(keyHash);
    return doc;
  }

  function callerOf(doc: KeyDoc | undefined, keyHash: string): Caller | null {
    if (!doc || doc.keyHash !== keyHash || doc.revokedAt !== null) return null;
    if (doc.expiresAt !== null && Date.parse(doc.expiresAt) <= now().getTime()) return null;
    return { keyId: doc.keyId, owner: doc.owner };
  }

  return {
    async authenticate(authorization, memo) {
      if (typeof authorization !== 'string') return null;
      let keyHash: string;
      if (
        memo?.authorization !== undefined &&
        memo.keyHash !== undefined &&
        sameText(memo.authorization, authorization)
      )
        keyHash = memo.keyHash;
      else {
        const hashed = keyHashOf(authorization);
        if (hashed === null) return null;
        keyHash = hashed;
        if (memo !== undefined) {
          memo.authorization = authorization;
          memo.keyHash = keyHash;
        }
      }
      return callerOf(await keyDoc(keyHash), keyHash);
    },

    async ownerAccess(owner) {
      // Kept per owner while the owners read model's checkpoint is unchanged (every owner change advances it).
      const at = await store.checkpoint(OWNERS_COLLECTION);
      if (at !== ownersAt) {
        owners.clear();
        ownersAt = at;
      }
      const known = owners.get(owner);
      if (known) return { ...known };
      const doc = (await store.get<OwnerDoc>(OWNERS_COLLECTION, owner))?.doc;
      const access = { allowlisted: doc?.allowlisted ?? false, linked: doc?.linked ?? false };
      // A checkpoint that moved during the read keeps nothing (the next request reads again).
      if (ownersAt === at && (await store.checkpoint(OWNERS_COLLECTION)) === at) {
        if (owners.size >= KEYS_KEPT_MAX) owners.clear();
        owners.set(owner, access);
      }
      return { ...access };
    },
  };
}

/** What an access command writes to: the log it appends to and the read store it settles. */
export type AccessStores = { log: EventLog; store: ReadStore };

/** Events folded per commit while settling (access streams are small; this bounds a long gap). */
const SETTLE_BATCH = 1000;

/**
 * Brings one access read model up to `position` (at least), folding with the projector's own code
 * and committing with a compare-and-set on the checkpoint it started from: when a running projector
 * (or another command) advanced the collection meanwhile, the commit is refused and the loop looks
 * again, so nothing is applied twice and the checkpoint never moves back.
 */
type SettleTarget = 'event' | 'head';

async function settle(
  stores: AccessStores,
  projector: Projector,
  position: number,
  target: SettleTarget,
): Promise<void> {
  const { log, store } = stores;
  for (;;) {
    const after = await store.checkpoint(projector.collection);
    if (after >= position) return;
    const events = await log.readAll({
      afterPosition: after,
      toPosition: position,
      typePrefixes: projector.typePrefixes,
      limit: SETTLE_BATCH,
    });
    const last = events.at(-1)?.position;
    // When `position` is the command's own event (of the projector's types), a short page must hold
    // it: one that does not came from a node that lags, and moves the checkpoint only to what it saw.
    const lagged = events.length < SETTLE_BATCH && target === 'event' && last !== position;
    const checkpoint = lagged ? (last ?? after) : events.length < SETTLE_BATCH ? position : last!;
    if (checkpoint > after) {
      const ids = [...new Set(events.map((e) => projector.keyOf(e)).filter((id): id is string => id !== null))];
      const existing = ids.length > 0 ? await store.getMany(projector.collection, ids) : new Map<string, StoredDoc>();
      const writes = [...foldEvents(projector, existing, events).values()];
      await store.commit(projector.collection, writes, checkpoint, after);
    }
    if (lagged) await new Promise((resolve) => setTimeout(resolve, LAGGED_RETRY_MS));
  }
}

/** Before the log is read again after it answered without the command's own event (a node catching up). */
const LAGGED_RETRY_MS = 50;

/** Brings the keys read model up to everything the log holds now (`keys list`), without the other projections. */
export async function settleKeys(stores: AccessStores): Promise<void> {
  await settle(stores, keysProjector, await stores.log.headPosition(), 'head');
}

/**
 * Every key of the keys read model, newest first, read `pageSize` at a time in keyset pages (a key
 * issued while the list is read moves no page boundary), so a list of any length is read whole.
 */
export async function* allKeys(store: ReadStore, pageSize = 1000): AsyncGenerator<KeyDoc> {
  let before: { sortKey: string; id: string } | undefined;
  for (;;) {
    const page = await store.listKeyset<KeyDoc>(KEYS_COLLECTION, { limit: pageSize, ...(before ? { before } : {}) });
    for (const row of page) yield row.doc;
    const last = page.at(-1);
    if (page.length < pageSize || !last) return;
    before = { sortKey: last.sortKey, id: last.id };
  }
}

/** The position an access append landed at (a command event id is fresh, so never a duplicate). */
function positionOf(result: AppendResult): number {
  if (!result.ok) throw new Error('access change was refused by the event log');
  return Math.max(...result.events.map((e) => e.position));
}

export type IssuedKey = { key: string; keyId: string; owner: string; expiresAt: string | null };

/** Appends `key.issued` and settles the keys read model; the raw key is returned once and never stored. */
export async function issueKey(
  stores: AccessStores,
  owner: string,
  options: { expiresAt?: string | null; now?: Date } = {},
): Promise<IssuedKey> {
  const { log } = stores;
  const key = `pbk_${randomBytes(32).toString('base64url')}`;
  const keyHash = hashKey(key);
  const keyId = keyIdOf(keyHash);
  const expiresAt = options.expiresAt ?? null;
  const issuedAt = (options.now ?? new Date()).toISOString();
  const result = await log.append(
    streams.key(keyId),
    [{ id: commandEventId(), type: 'key.issued', data: { keyId, owner, keyHash, issuedAt, expiresAt } }],
    'no_stream',
  );
  if (!result.ok) throw new Error('key id collision; issue again');
  await settle(stores, keysProjector, positionOf(result), 'event');
  return { key, keyId, owner, expiresAt };
}

export type AccessCommandResult = { ok: true } | { ok: false; reason: string };

/** Appends `key.revoked` and returns once the keys read model refuses the key. */
export async function revokeKey(stores: AccessStores, keyId: string, now = new Date()): Promise<AccessCommandResult> {
  const { log } = stores;
  const revision = await log.streamRevision(streams.key(keyId));
  if (revision === null) return { ok: false, reason: `no key with id ${keyId}` };
  const appended = await log.append(streams.key(keyId), [
    { id: commandEventId(), type: 'key.revoked', data: { keyId, revokedAt: now.toISOString() } },
  ]);
  await settle(stores, keysProjector, positionOf(appended), 'event');
  return { ok: true };
}

export type OwnerChange = 'allow' | 'deny' | 'link' | 'unlink';

const ownerEventType: Record<OwnerChange, string> = {
  allow: 'owner.allowed',
  deny: 'owner.denied',
  link: 'owner.linked',
  unlink: 'owner.unlinked',
};

/** Appends the owner change and returns once the owners read model reflects it. */
export async function changeOwner(
  stores: AccessStores,
  owner: string,
  change: OwnerChange,
  now = new Date(),
): Promise<void> {
  const appended = await stores.log.append(streams.owner(owner), [
    { id: commandEventId(), type: ownerEventType[change], data: { owner, at: now.toISOString() } },
  ]);
  await settle(stores, ownersProjector, positionOf(appended), 'event');
}

/** How often an open request that holds its key (a change stream, a long-poll, an MCP listen) checks it again while it delivers nothing. */
export const KEY_RECHECK_MS = 5_000;

/** A key held by one open request: revocation and expiry end the request, not only the next one. */
export type KeyHold = {
  /** Aborts once the key no longer authenticates (revoked, expired), found by the periodic re-check. */
  readonly revoked: AbortSignal;
  /**
   * Checks the key now, before a delivery: false (and `revoked` aborted) once it no longer
   * authenticates. Rejects when the key store does not answer, as the delivery's own read would.
   */
  check(): Promise<boolean>;
  /** Stops watching the key (idempotent); call when the request ends. */
  release(): void;
};

export type HeldKeys = {
  /** Watches the key of `authorization` (as the request sent it) until released. */
  hold(authorization: string | undefined): KeyHold;
  /** Keys held now (tests). */
  held(): number;
  /** Stops the re-check timer (shutdown). */
  close(): void;
};

/**
 * One re-check for every held request of the process, every `recheckMs` while any is held: each
 * distinct credential is authenticated once per round, whatever the number of requests holding it,
 * and a credential that no longer authenticates aborts every hold of it. A key store that does not
 * answer a round keeps the holds until it does.
 */
export function createHeldKeys(access: Access, recheckMs = KEY_RECHECK_MS): HeldKeys {
  type Entry = { authorization: string | undefined; abort: AbortController };
  const entries = new Set<Entry>();
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  // Concurrent checks of one credential (the long-polls a commit wakes) share one authentication.
  const checking = new Map<string | undefined, Promise<boolean>>();

  function authenticates(authorization: string | undefined): Promise<boolean> {
    let pending = checking.get(authorization);
    if (!pending) {
      pending = access
        .authenticate(authorization)
        .then((caller) => caller !== null)
        .finally(() => checking.delete(authorization));
      checking.set(authorization, pending);
    }
    return pending;
  }

  function revoke(authorization: string | undefined): void {
    for (const entry of entries) if (entry.authorization === authorization) entry.abort.abort();
  }

  async function round(): Promise<void> {
    const credentials = new Set([...entries].map((e) => e.authorization));
    for (const authorization of credentials) {
      const valid = await authenticates(authorization).catch(() => true);
      if (!valid) revoke(authorization);
    }
  }

  function updateTimer(): void {
    if (entries.size > 0 && timer === null && !closed) {
      timer = setInterval(() => void round(), recheckMs);
      timer.unref();
    } else if (entries.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  }

  return {
    hold(authorization) {
      const entry: Entry = { authorization, abort: new AbortController() };
      entries.add(entry);
      updateTimer();
      return {
        revoked: entry.abort.signal,
        async check() {
          if (entry.abort.signal.aborted) return false;
          const valid = await authenticates(authorization);
          if (!valid) revoke(authorization);
          return valid;
        },
        release() {
          if (entries.delete(entry)) updateTimer();
        },
      };
    },
    held: () => entries.size,
    close() {
      closed = true;
      entries.clear();
      updateTimer();
    },
  };
}
