import type { ThesisItem } from '../../readmodels/schemas.ts';

/**
 * The thesis source port: one read of the feed for one contract on the supported chain.
 * `items` are every well-formed item the source returned, in any order and at any trade value;
 * the reader applies the threshold, the 25-item limit and the order (select.ts), in one place
 * for every adapter. A fault is never thrown: it is `{ok: false, outcome}`, where `outcome` is a
 * short sentence of this service's own words (it becomes ThesisStatus.lastOutcome) that never
 * quotes the source's body.
 */
export type ThesisSourceRead =
  | {
      ok: true;
      items: ThesisItem[];
      /** the source said it holds more than it sent */ moreAtSource: boolean;
      sourceUrl: string;
    }
  | { ok: false; outcome: string };

export type ThesisSource = {
  /** `contract` is lower-case `0x` + 40 hex digits. */
  read(contract: string): Promise<ThesisSourceRead>;
};
