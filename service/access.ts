import { createHash, randomBytes } from 'node:crypto';
import type { EventLog } from '../eventstore/port.ts';
import { commandEventId } from '../events/ids.ts';
import { streams } from '../events/streams.ts';
import { foldKey, foldOwner, type KeyDoc, type OwnerDoc } from '../projectors/access.ts';
import type { Caller } from './caller.ts';

/** `pbk_` + 32 random bytes in base64url (DESIGN §6). */
const KEY_PATTERN = /^pbk_[A-Za-z0-9_-]{43}$/;

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** The key id is derived from the hash, so a request finds its key stream without any index. */
export const keyIdOf = (keyHash: string): string => keyHash.slice(0, 24);

export type OwnerAccess = { allowlisted: boolean; linked: boolean };

export type Access = {
  /** Every failure (missing, malformed, unknown, revoked, expired) is the same `null`. */
  authenticate(authorization: string | undefined): Promise<Caller | null>;
  /** Re-checked on every call: folds the owner's stream, so allow/deny/link apply immediately. */
  ownerAccess(owner: string): Promise<OwnerAccess>;
};

/**
 * Authentication and allowlist checks fold the key's and the owner's own streams (a few events
 * each) on every request instead of reading a projection: an issue, revoke, allow or deny takes
 * effect on the very next request on both surfaces, whatever the projectors' lag.
 */
export function createAccess(log: EventLog, now: () => Date = () => new Date()): Access {
  async function keyDoc(keyId: string): Promise<KeyDoc | null> {
    let doc: KeyDoc | null = null;
    for (const event of await log.readStream(streams.key(keyId))) doc = foldKey(doc, event);
    return doc;
  }

  return {
    async authenticate(authorization) {
      if (typeof authorization !== 'string') return null;
      const match = /^Bearer (\S+)$/.exec(authorization.trim());
      const key = match?.[1];
      if (!key || !KEY_PATTERN.test(key)) return null;
      const keyHash = hashKey(key);
      const doc = await keyDoc(keyIdOf(keyHash));
      if (!doc || doc.keyHash !== keyHash || doc.revokedAt !== null) return null;
      if (doc.expiresAt !== null && Date.parse(doc.expiresAt) <= now().getTime()) return null;
      return { keyId: doc.keyId, owner: doc.owner };
    },

    async ownerAccess(owner) {
      let doc: OwnerDoc | null = null;
      for (const event of await log.readStream(streams.owner(owner))) doc = foldOwner(doc, event);
      return { allowlisted: doc?.allowlisted ?? false, linked: doc?.linked ?? false };
    },
  };
}

export type IssuedKey = { key: string; keyId: string; owner: string; expiresAt: string | null };

/** Appends `key.issued`; the raw key is returned once and never stored. */
export async function issueKey(log: EventLog, owner: string, options: { expiresAt?: string | null; now?: Date } = {}): Promise<IssuedKey> {
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
  return { key, keyId, owner, expiresAt };
}

export type AccessCommandResult = { ok: true } | { ok: false; reason: string };

export async function revokeKey(log: EventLog, keyId: string, now = new Date()): Promise<AccessCommandResult> {
  const revision = await log.streamRevision(streams.key(keyId));
  if (revision === null) return { ok: false, reason: `no key with id ${keyId}` };
  await log.append(streams.key(keyId), [{ id: commandEventId(), type: 'key.revoked', data: { keyId, revokedAt: now.toISOString() } }]);
  return { ok: true };
}

export type OwnerChange = 'allow' | 'deny' | 'link' | 'unlink';

const ownerEventType: Record<OwnerChange, string> = {
  allow: 'owner.allowed',
  deny: 'owner.denied',
  link: 'owner.linked',
  unlink: 'owner.unlinked',
};

export async function changeOwner(log: EventLog, owner: string, change: OwnerChange, now = new Date()): Promise<void> {
  await log.append(streams.owner(owner), [{ id: commandEventId(), type: ownerEventType[change], data: { owner, at: now.toISOString() } }]);
}
