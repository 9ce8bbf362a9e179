import type { Config } from '../../config/config.ts';
import type { ThesisItem } from '../../readmodels/schemas.ts';
import { createHttpThesisSource } from './http-source.ts';
import { createSampleThesisSource } from './sample-source.ts';

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

export type ThesisSourceChoice =
  { ok: true; source: ThesisSource; kind: 'http' | 'sample' } | { ok: false; reason: string };

/** HTTP when PULSEBOARD_THESIS_SOURCE_URL is set, else the labelled sample adapter (embedded default). */
export function createThesisSource(
  config: Pick<
    Config,
    'PULSEBOARD_THESIS_SOURCE_URL' | 'PULSEBOARD_THESIS_SOURCE_KEY' | 'PULSEBOARD_THESIS_SOURCE_TIMEOUT_MS'
  >,
): ThesisSourceChoice {
  const baseUrl = config.PULSEBOARD_THESIS_SOURCE_URL;
  if (baseUrl === undefined) return { ok: true, source: createSampleThesisSource(), kind: 'sample' };
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    return { ok: false, reason: 'PULSEBOARD_THESIS_SOURCE_URL must be an http(s) URL' };
  }
  const source = createHttpThesisSource({
    baseUrl,
    apiKey: config.PULSEBOARD_THESIS_SOURCE_KEY,
    timeoutMs: config.PULSEBOARD_THESIS_SOURCE_TIMEOUT_MS,
  });
  return { ok: true, source, kind: 'http' };
}
