import { z } from 'zod';
import { isoDateTime } from '../readmodels/schemas.ts';

/** Access changes, appended by the `pulseboard keys` / `owners` commands. */
const owner = z.string().min(1).max(100);

export const accessPayloads = {
  'key.issued': z
    .object({
      keyId: z.string().min(1),
      owner,
      keyHash: z.string().regex(/^[0-9a-f]{64}$/),
      issuedAt: isoDateTime,
      expiresAt: isoDateTime.nullable(),
    })
    .strict(),
  'key.revoked': z.object({ keyId: z.string().min(1), revokedAt: isoDateTime }).strict(),
  'owner.allowed': z.object({ owner, at: isoDateTime }).strict(),
  'owner.denied': z.object({ owner, at: isoDateTime }).strict(),
  'owner.linked': z.object({ owner, at: isoDateTime }).strict(),
  'owner.unlinked': z.object({ owner, at: isoDateTime }).strict(),
} as const;

export type AccessType = keyof typeof accessPayloads;
export type AccessEventData<T extends AccessType> = z.infer<(typeof accessPayloads)[T]>;
