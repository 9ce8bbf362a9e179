import type { z } from 'zod';
import { BEATS } from '../config/beats.ts';
import { PULSE_COLLECTION } from '../projectors/pulse.ts';
import type { ReadStore } from '../readmodels/port.ts';
import type { Beat, PulseCard, pulseListSchema, pulseOneSchema } from '../readmodels/schemas.ts';
import { echoed, errors, fail, ok, type Result } from './errors.ts';
import { parseParams } from './requests/params.ts';
import { pulseListQuerySchema, pulseOneQuerySchema, pulseParamsSchema } from './requests/pulse.ts';

export type PulseList = z.infer<typeof pulseListSchema>;
export type PulseOne = z.infer<typeof pulseOneSchema>;

export type PulseService = {
  /** GET /v1/pulse: all eight beats in configured order, `card: null` where none was published. */
  all(query?: unknown): Promise<Result<PulseList>>;
  /** GET /v1/pulse/{beat}: one beat; an unknown beat is 404. */
  one(params: unknown, query?: unknown): Promise<Result<PulseOne>>;
};

export function createPulseService(deps: { store: ReadStore; now?: () => Date }): PulseService {
  const { store } = deps;
  const now = deps.now ?? (() => new Date());

  return {
    async all(query) {
      const q = parseParams(pulseListQuerySchema, query);
      if (!q.ok) return fail(errors.badRequest(q.message));
      const readAt = now().toISOString();
      const cards = await store.getMany<PulseCard>(
        PULSE_COLLECTION,
        BEATS.map((b) => b.id),
      );
      const beats: Beat[] = BEATS.map((b) => ({
        id: b.id,
        label: b.label,
        blurb: b.blurb,
        card: cards.get(b.id)?.doc ?? null,
      }));
      return ok({ beats, readAt });
    },

    async one(params, query) {
      const p = parseParams(pulseParamsSchema, params);
      if (!p.ok) return fail(errors.badRequest(p.message));
      const q = parseParams(pulseOneQuerySchema, query);
      if (!q.ok) return fail(errors.badRequest(q.message));
      const beat = BEATS.find((b) => b.id === p.value.beat);
      if (!beat)
        return fail(
          errors.notFound(`no beat '${echoed(p.value.beat)}'; beats are ${BEATS.map((b) => b.id).join(', ')}`),
        );
      const readAt = now().toISOString();
      const card = (await store.get<PulseCard>(PULSE_COLLECTION, beat.id))?.doc ?? null;
      return ok({ beat: { id: beat.id, label: beat.label, blurb: beat.blurb, card }, readAt });
    },
  };
}
