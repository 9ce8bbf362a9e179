import { z } from 'zod';
import { isoDateTime, THESIS_TEXT_MAX, type ThesisItem } from '../../readmodels/schemas.ts';

/**
 * ASSUMPTION: the thesis provider is a third party whose API is not part of the spec. This is the
 * response shape the HTTP adapter expects from
 *   GET {PULSEBOARD_THESIS_SOURCE_URL}/v1/networks/4663/tokens/{contract}/theses?min_usd_value=1000
 *   Authorization: Bearer {PULSEBOARD_THESIS_SOURCE_KEY}
 * Anything else (another status, JSON that does not parse, a shape that does not match) is a
 * failed read; unknown extra fields are ignored, so the provider may add fields freely.
 *
 *   {
 *     "theses": [{
 *       "id": "…" | 123,
 *       "body": "…",                                   // the thesis text
 *       "created_at": "2026-11-22T10:00:00Z",
 *       "author": {"display_name"?, "username"?, "avatar_url"?: string | null, "verified"?: boolean},
 *       "trade"?: {"usd_value"?, "realized_pnl_usd"?, "unrealized_pnl_usd"?: number | null} | null
 *     }],
 *     "has_more"?: boolean,                            // the provider holds more than it sent
 *     "permalink"?: "https://…"                        // the provider's page for this token's theses
 *   }
 */

const nullableText = z.string().nullable().optional();
const nullableNumber = z.number().nullable().optional();

export const providerThesisSchema = z.object({
  id: z.union([z.string().min(1).max(200), z.number().int()]),
  body: z.string(),
  created_at: isoDateTime,
  author: z.object({
    display_name: nullableText,
    username: nullableText,
    avatar_url: nullableText,
    verified: z.boolean().optional(),
  }),
  trade: z
    .object({ usd_value: nullableNumber, realized_pnl_usd: nullableNumber, unrealized_pnl_usd: nullableNumber })
    .nullable()
    .optional(),
});

export const providerResponseSchema = z.object({
  theses: z.array(providerThesisSchema).max(5000),
  has_more: z.boolean().optional(),
  permalink: z.string().optional(),
});

export type ProviderResponse = z.infer<typeof providerResponseSchema>;

const SHORTENED_NOTE = ' … [shortened to fit; the full text is at the source]';

/** Longer texts are shortened to the 12,000-character item limit with an explicit note (as for call records). */
export function fitThesisText(text: string): string {
  if (text.length <= THESIS_TEXT_MAX) return text;
  return text.slice(0, THESIS_TEXT_MAX - SHORTENED_NOTE.length) + SHORTENED_NOTE;
}

export function toThesisItem(thesis: z.infer<typeof providerThesisSchema>): ThesisItem {
  return {
    id: String(thesis.id),
    text: fitThesisText(thesis.body),
    createdAt: thesis.created_at,
    author: {
      name: thesis.author.display_name ?? null,
      handle: thesis.author.username ?? null,
      avatar: thesis.author.avatar_url ?? null,
      verified: thesis.author.verified ?? false,
    },
    trade: {
      usdValue: thesis.trade?.usd_value ?? null,
      realizedPnlUsd: thesis.trade?.realized_pnl_usd ?? null,
      unrealizedPnlUsd: thesis.trade?.unrealized_pnl_usd ?? null,
    },
  };
}
