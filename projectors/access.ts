import type { RecordedEvent } from '../eventstore/port.ts';
import { dataOf } from '../events/catalogue.ts';
import type { Entity, Projector } from './projector.ts';

/** A key as the access read model holds it; never served to API consumers. */
export type KeyDoc = {
  keyId: string;
  owner: string;
  keyHash: string;
  issuedAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
};

export type OwnerDoc = { owner: string; allowlisted: boolean; linked: boolean; updatedAt: string };

export const KEYS_COLLECTION = 'keys';
export const OWNERS_COLLECTION = 'owners';

export function foldKey(current: KeyDoc | null, event: RecordedEvent): KeyDoc | null {
  if (event.type === 'key.issued') {
    const d = dataOf('key.issued', event.data);
    return {
      keyId: d.keyId,
      owner: d.owner,
      keyHash: d.keyHash,
      issuedAt: d.issuedAt,
      expiresAt: d.expiresAt,
      revokedAt: null,
    };
  }
  if (event.type === 'key.revoked' && current) {
    return { ...current, revokedAt: current.revokedAt ?? dataOf('key.revoked', event.data).revokedAt };
  }
  return current;
}

export function foldOwner(current: OwnerDoc | null, event: RecordedEvent): OwnerDoc {
  const { owner, at } = dataOf('owner.allowed', event.data);
  const base: OwnerDoc = current ?? { owner, allowlisted: false, linked: false, updatedAt: at };
  switch (event.type) {
    case 'owner.allowed':
      return { ...base, allowlisted: true, updatedAt: at };
    case 'owner.denied':
      return { ...base, allowlisted: false, updatedAt: at };
    case 'owner.linked':
      return { ...base, linked: true, updatedAt: at };
    case 'owner.unlinked':
      return { ...base, linked: false, updatedAt: at };
    default:
      return base;
  }
}

const keyEntity = (doc: KeyDoc): Entity<KeyDoc, null> => ({
  doc,
  state: null,
  sortKey: doc.issuedAt,
  facet: doc.revokedAt === null ? 'active' : 'revoked',
  keys: { owner: [doc.owner] },
});

export const keysProjector: Projector<KeyDoc, null> = {
  collection: KEYS_COLLECTION,
  typePrefixes: ['key.'],
  keyOf: (event) => (event.type.startsWith('key.') ? dataOf('key.revoked', event.data).keyId : null),
  fold(current, event) {
    const next = foldKey(current?.doc ?? null, event);
    return next ? keyEntity(next) : null;
  },
};

export const ownersProjector: Projector<OwnerDoc, null> = {
  collection: OWNERS_COLLECTION,
  typePrefixes: ['owner.'],
  keyOf: (event) => dataOf('owner.allowed', event.data).owner,
  fold(current, event) {
    const doc = foldOwner(current?.doc ?? null, event);
    return { doc, state: null, sortKey: doc.owner, facet: 'owner', keys: {} };
  },
};
