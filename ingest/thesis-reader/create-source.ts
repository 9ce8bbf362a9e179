import type { Config } from '../../config/config.ts';
import { createHttpThesisSource } from './http-source.ts';
import { createSampleThesisSource } from './sample-source.ts';
import type { ThesisSource } from './source.ts';

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
