import { THESIS_NETWORK_ID, THESIS_THRESHOLD } from '../../readmodels/schemas.ts';
import { providerResponseSchema, toThesisItem } from './provider-schema.ts';
import type { ThesisSource, ThesisSourceRead } from './source.ts';

/** A response body larger than this is refused unread (25 items of 12,000 characters fit many times). */
export const THESIS_SOURCE_MAX_BODY_BYTES = 4 * 1024 * 1024;

export type HttpThesisSourceOptions = {
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  fetch?: typeof fetch;
};

type BodyRead = { ok: true; text: string } | { ok: false; tooLarge: true };

async function readCapped(response: Response, maxBytes: number): Promise<BodyRead> {
  if (!response.body) return { ok: true, text: '' };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return { ok: false, tooLarge: true };
    }
    chunks.push(value);
  }
  return { ok: true, text: Buffer.concat(chunks).toString('utf8') };
}

function statusOutcome(status: number): string {
  if (status === 401 || status === 403) return `source refused the API key (HTTP ${status})`;
  if (status === 429) return 'source rate-limited the read (HTTP 429)';
  return `source answered HTTP ${status}`;
}

/**
 * The provider adapter: one GET per read, never retried. Everything that can
 * go wrong becomes `{ok: false, outcome}` in this service's own words: the outcome never quotes
 * the body (a JSON.parse message would), so no thesis text can reach a status or a log.
 */
export function createHttpThesisSource(options: HttpThesisSourceOptions): ThesisSource {
  const doFetch = options.fetch ?? fetch;
  const base = options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`;

  return {
    async read(contract): Promise<ThesisSourceRead> {
      const url = new URL(`v1/networks/${THESIS_NETWORK_ID}/tokens/${encodeURIComponent(contract)}/theses`, base);
      url.searchParams.set('min_usd_value', String(THESIS_THRESHOLD));
      const headers: Record<string, string> = { accept: 'application/json' };
      if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
      const signal = AbortSignal.timeout(options.timeoutMs);
      const timedOut = { ok: false, outcome: `source did not answer within ${options.timeoutMs} ms` } as const;

      let response: Response;
      try {
        response = await doFetch(url, { headers, signal, redirect: 'manual' });
      } catch {
        return signal.aborted ? timedOut : { ok: false, outcome: 'source could not be reached' };
      }

      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        return { ok: false, outcome: statusOutcome(response.status) };
      }
      let body: BodyRead;
      try {
        body = await readCapped(response, THESIS_SOURCE_MAX_BODY_BYTES);
      } catch {
        return signal.aborted
          ? timedOut
          : { ok: false, outcome: 'source connection failed while sending the response' };
      }
      if (!body.ok)
        return { ok: false, outcome: `source sent more than ${THESIS_SOURCE_MAX_BODY_BYTES / 1024 / 1024} MiB` };

      let json: unknown;
      try {
        json = JSON.parse(body.text);
      } catch {
        return { ok: false, outcome: 'source sent malformed JSON' };
      }
      const parsed = providerResponseSchema.safeParse(json);
      if (!parsed.success) {
        // Paths are schema keys and array indexes only, never values.
        const where = parsed.error.issues[0]?.path.join('.') || '(top level)';
        return { ok: false, outcome: `source response did not match the expected shape (at ${where})` };
      }
      const permalink = parsed.data.permalink;
      const sourceUrl =
        permalink !== undefined && /^https?:\/\//.test(permalink) && URL.canParse(permalink)
          ? permalink
          : url.toString();
      return {
        ok: true,
        items: parsed.data.theses.map(toThesisItem),
        moreAtSource: parsed.data.has_more ?? false,
        sourceUrl,
      };
    },
  };
}
