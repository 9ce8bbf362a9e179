import { z } from 'zod';
import {
  askStatusSchema,
  calltrackerStatusSchema,
  callRecordSchema,
  callTokenSchema,
  dossierSchema,
  identitySchema,
  isoDateTime,
  onchainSchema,
  pulseCardSchema,
  researchStateSchema,
} from '../readmodels/schemas.ts';

/**
 * Payloads of the source messages (docs/source-messages.md). An absent field leaves the stored value as it is,
 * a null sets it to null, an unknown field is rejected (hence strict objects).
 * The stored event's data is the payload plus `at`, the time the source observed it.
 */

const projectId = z.string().min(1).max(200);
const nullableText = z.string().max(10_000).nullable();
const count = z.number().int().min(0).nullable();

export const sourcePayloads = {
  'project.sighted': z
    .object({
      projectId,
      handle: z.string().max(100).nullable().optional(),
      identity: identitySchema.nullable().optional(),
      name: nullableText.optional(),
      pfp: nullableText.optional(),
      fol: count.optional(),
      why: nullableText.optional(),
      bio: nullableText.optional(),
    })
    .strict(),
  'rival.listed': z.object({ projectId }).strict(),
  'followers.observed': z
    .object({
      projectId,
      source: z.string().min(1),
      handle: z.string().min(1).max(100),
      value: z.number().int().min(0),
      checkedAt: isoDateTime,
    })
    .strict(),
  'dossier.written': z.object({ projectId, dossier: dossierSchema }).strict(),
  'onchain.checked': z.object({ projectId, onchain: onchainSchema }).strict(),
  'calltracker.checked': z
    .object({
      projectId,
      status: calltrackerStatusSchema,
      historyComplete: z.boolean(),
      posts: count,
      firstAt: isoDateTime.nullable().optional(),
      firstMcap: z.number().nullable().optional(),
      firstCaller: z.string().nullable().optional(),
      latestAt: isoDateTime.nullable().optional(),
      mcap: z.number().nullable().optional(),
    })
    .strict()
    .superRefine((data, ctx) => {
      const unresolved = data.status === 'identity_unknown' || data.status === 'identity_mismatch';
      if (unresolved && data.posts !== null) {
        ctx.addIssue({ code: 'custom', path: ['posts'], message: `must be null when status is ${data.status}` });
      }
      if (data.status === 'checked_no_match' && data.posts !== 0) {
        ctx.addIssue({ code: 'custom', path: ['posts'], message: 'must be 0 when status is checked_no_match' });
      }
    }),
  'vote.cast': z
    .object({
      projectId,
      voterId: z.string().min(1).max(200),
      name: z.string().max(200).nullable(),
      avatar: z.string().max(2000).nullable(),
      direction: z.enum(['up', 'down', 'none']),
    })
    .strict(),
  'research.updated': z
    .object({ projectId, state: researchStateSchema, nextEligibleAt: isoDateTime.nullable().optional() })
    .strict(),
  'ask.updated': z
    .object({
      projectId,
      askId: z.string().min(1).max(200),
      status: askStatusSchema,
      answer: z.string().max(100_000).nullable().optional(),
    })
    .strict(),
  'call.recorded': callRecordSchema
    .extend({
      // Longer texts are accepted and shortened by the projector with an explicit note (docs/source-messages.md).
      thesisText: z.string().max(1_000_000),
      tokens: z
        .array(callTokenSchema.omit({ project: true }))
        .min(1)
        .max(20),
    })
    .strict(),
  'call.suppressed': z.object({ callId: z.uuid() }).strict(),
  'call.restored': z.object({ callId: z.uuid() }).strict(),
  'calls.collected': z
    .object({
      checkedAt: isoDateTime.nullable(),
      completeAt: isoDateTime.nullable(),
      lastAttemptComplete: z.boolean().nullable(),
    })
    .strict(),
  'pulse.published': z.object({ card: pulseCardSchema }).strict(),
} as const;

export type SourceType = keyof typeof sourcePayloads;
export const sourceTypes = Object.keys(sourcePayloads) as SourceType[];
export type SourcePayload<T extends SourceType> = z.infer<(typeof sourcePayloads)[T]>;

/** Stored event data of a source event: the payload plus the source's observation time. */
export type SourceEventData<T extends SourceType> = SourcePayload<T> & { at: string };

export function isSourceType(type: string): type is SourceType {
  return Object.hasOwn(sourcePayloads, type);
}
